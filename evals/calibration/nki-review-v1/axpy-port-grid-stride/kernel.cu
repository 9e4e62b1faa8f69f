// out = a * x + y over n floats. A grid-stride loop: each thread handles elements
// i, i + stride, i + 2 * stride, ... so any grid size covers any n.
#include <cuda_runtime.h>

__global__ void axpy_kernel(int n, float a, const float* __restrict__ x, const float* __restrict__ y,
                            float* __restrict__ out) {
    const int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        out[i] = a * x[i] + y[i];
    }
}

void launch_axpy(int n, float a, const float* x, const float* y, float* out, cudaStream_t s) {
    const int threads = 128;
    const int blocks = 256;
    axpy_kernel<<<blocks, threads, 0, s>>>(n, a, x, y, out);
}
