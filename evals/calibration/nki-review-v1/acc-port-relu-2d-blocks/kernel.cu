// y = max(x, 0) * scale over a row-major [rows, cols] float matrix.
// A 2-D grid of 16 x 16 thread blocks: thread (threadIdx.y, threadIdx.x) of block
// (blockIdx.y, blockIdx.x) handles element (blockIdx.y * 16 + threadIdx.y, blockIdx.x * 16 + threadIdx.x).
#include <cuda_runtime.h>

#define TILE 16

__global__ void relu_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols,
                                  float scale) {
    const int r = blockIdx.y * TILE + threadIdx.y;
    const int c = blockIdx.x * TILE + threadIdx.x;
    if (r < rows && c < cols) {
        y[r * cols + c] = fmaxf(x[r * cols + c], 0.0f) * scale;
    }
}

void launch_relu_scale(const float* x, float* y, int rows, int cols, float scale, cudaStream_t s) {
    dim3 block(TILE, TILE);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    relu_scale_kernel<<<grid, block, 0, s>>>(x, y, rows, cols, scale);
}
