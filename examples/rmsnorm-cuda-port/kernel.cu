// RMSNorm over the last axis: y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * w
// One thread block per row; half inputs, float accumulation, shared-memory tree reduction.
#include <cuda_fp16.h>

#define THREADS 256

__global__ void rmsnorm_kernel(const __half* __restrict__ x, const __half* __restrict__ w,
                               __half* __restrict__ y, int cols, float eps) {
    __shared__ float partial[THREADS];
    const int row = blockIdx.x;
    const __half* xr = x + (size_t)row * cols;

    float sum_sq = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = __half2float(xr[c]);
        sum_sq += v * v;
    }
    partial[threadIdx.x] = sum_sq;
    __syncthreads();

    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        }
        __syncthreads();
    }
    const float inv_rms = rsqrtf(partial[0] / cols + eps);

    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = __half2float(xr[c]) * inv_rms * __half2float(w[c]);
        y[(size_t)row * cols + c] = __float2half(v);
    }
}

void launch_rmsnorm(const __half* x, const __half* w, __half* y, int rows, int cols, cudaStream_t s) {
    rmsnorm_kernel<<<rows, THREADS, 0, s>>>(x, w, y, cols, 1e-6f);
}
