// Column sums out[c] = sum over r of x[r, c] for a float matrix. Blocks cover the matrix in
// strips of ROWS_PER_BLOCK rows (blockIdx.y) by THREADS columns (blockIdx.x); each thread sums its
// column over the strip and adds the partial sum to out with atomicAdd, so strips may finish in
// any order. out must be zeroed before the launch.
#include <cuda_runtime.h>

#define ROWS_PER_BLOCK 128
#define THREADS 256

__global__ void colsum_kernel(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    const int col = blockIdx.x * THREADS + threadIdx.x;
    const int row0 = blockIdx.y * ROWS_PER_BLOCK;
    if (col >= cols) return;
    const int row_end = min(row0 + ROWS_PER_BLOCK, rows);
    float partial = 0.0f;
    for (int r = row0; r < row_end; ++r) partial += x[(size_t)r * cols + col];
    atomicAdd(&out[col], partial);
}

void launch_colsum(const float* x, float* out, int rows, int cols, cudaStream_t s) {
    cudaMemsetAsync(out, 0, cols * sizeof(float), s);
    dim3 grid((cols + THREADS - 1) / THREADS, (rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
    colsum_kernel<<<grid, THREADS, 0, s>>>(x, out, rows, cols);
}
