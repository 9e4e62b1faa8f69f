// Row softmax of a half matrix: y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)).
// One block of 256 threads per row; the max and the sum are reduced in float through shared
// memory (a tree over the block's partial results); the output is half.
#include <cuda_fp16.h>

#define THREADS 256

__global__ void softmax_rows(const __half* __restrict__ x, __half* __restrict__ y, int cols) {
    __shared__ float red[THREADS];
    const __half* xr = x + (size_t)blockIdx.x * cols;
    __half* yr = y + (size_t)blockIdx.x * cols;

    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, __half2float(xr[c]));
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    const float row_max = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int c = threadIdx.x; c < cols; c += THREADS) sum += __expf(__half2float(xr[c]) - row_max);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float inv_sum = 1.0f / red[0];

    for (int c = threadIdx.x; c < cols; c += THREADS)
        yr[c] = __float2half(__expf(__half2float(xr[c]) - row_max) * inv_sum);
}

void launch_softmax_rows(const __half* x, __half* y, int rows, int cols, cudaStream_t s) {
    softmax_rows<<<rows, THREADS, 0, s>>>(x, y, cols);
}
