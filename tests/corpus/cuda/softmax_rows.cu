// Row softmax over a [rows, cols] half-precision matrix.
//
// One thread block per row (blockIdx.x = row), BLOCK_THREADS threads striding over the
// columns.  Statistics are accumulated in float although inputs and outputs are half.
// Each reduction (row max, then row sum) is a warp-shuffle tree inside every warp,
// per-warp partials in __shared__ memory, and a final shuffle tree in warp 0.
#include <cuda_fp16.h>
#include <math.h>

#define WARP_SIZE 32
#define BLOCK_THREADS 256

__device__ __forceinline__ float warp_reduce_max(float v) {
    for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float warp_reduce_sum(float v) {
    for (int offset = WARP_SIZE / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void softmax_rows_kernel(const __half* __restrict__ x, __half* __restrict__ y, int cols) {
    __shared__ float warp_partial[BLOCK_THREADS / WARP_SIZE];
    __shared__ float row_stat;

    const int row = blockIdx.x;
    const int tid = threadIdx.x;
    const int lane = tid % WARP_SIZE;
    const int warp = tid / WARP_SIZE;
    const int n_warps = blockDim.x / WARP_SIZE;
    const __half* x_row = x + (size_t)row * cols;
    __half* y_row = y + (size_t)row * cols;

    // Phase 1: row maximum.
    float local_max = -INFINITY;
    for (int c = tid; c < cols; c += blockDim.x)
        local_max = fmaxf(local_max, __half2float(x_row[c]));
    local_max = warp_reduce_max(local_max);
    if (lane == 0) warp_partial[warp] = local_max;
    __syncthreads();
    if (warp == 0) {
        float m = lane < n_warps ? warp_partial[lane] : -INFINITY;
        m = warp_reduce_max(m);
        if (lane == 0) row_stat = m;
    }
    __syncthreads();
    const float row_max = row_stat;

    // Phase 2: sum of exponentials, accumulated in float.
    float local_sum = 0.0f;
    for (int c = tid; c < cols; c += blockDim.x)
        local_sum += __expf(__half2float(x_row[c]) - row_max);
    local_sum = warp_reduce_sum(local_sum);
    if (lane == 0) warp_partial[warp] = local_sum;
    __syncthreads();
    if (warp == 0) {
        float s = lane < n_warps ? warp_partial[lane] : 0.0f;
        s = warp_reduce_sum(s);
        if (lane == 0) row_stat = s;
    }
    __syncthreads();
    const float inv_sum = 1.0f / row_stat;

    // Phase 3: normalise and write back as half.
    for (int c = tid; c < cols; c += blockDim.x)
        y_row[c] = __float2half(__expf(__half2float(x_row[c]) - row_max) * inv_sum);
}

void softmax_rows(const __half* x, __half* y, int rows, int cols, cudaStream_t stream) {
    softmax_rows_kernel<<<rows, BLOCK_THREADS, 0, stream>>>(x, y, cols);
}
