// Column means y[c] = sum over r of x[r, c] / rows of a row-major [rows, cols] float matrix.
// One thread per column walks the rows, summing in float.
#include <cuda_runtime.h>

__global__ void colmean_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < cols) {
        float s = 0.0f;
        for (int r = 0; r < rows; ++r) s += x[r * cols + c];
        y[c] = s / rows;
    }
}

void launch_colmean(const float* x, float* y, int rows, int cols, cudaStream_t s) {
    colmean_kernel<<<(cols + 255) / 256, 256, 0, s>>>(x, y, rows, cols);
}
