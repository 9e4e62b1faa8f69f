// y = max(x, 0) over n floats: one thread per element, a bounds check for the last block.
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}

void launch_relu(const float* x, float* y, int n, cudaStream_t s) {
    const int threads = 128;
    relu_kernel<<<(n + threads - 1) / threads, threads, 0, s>>>(x, y, n);
}
