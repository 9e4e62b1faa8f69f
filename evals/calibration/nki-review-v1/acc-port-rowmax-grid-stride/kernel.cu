// y[r, :] = x[r, :] / max(|x[r, :]|): each row scaled by its largest magnitude (0 rows stay 0).
// One thread per row, rows visited in a grid-stride loop, so any launch covers any row count.
#include <cuda_runtime.h>
#include <math.h>

__global__ void rowmax_scale_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    const int stride = blockDim.x * gridDim.x;
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride) {
        float m = 0.0f;
        for (int c = 0; c < cols; ++c) m = fmaxf(m, fabsf(x[r * cols + c]));
        const float inv = m > 0.0f ? 1.0f / m : 0.0f;
        for (int c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * inv;
    }
}

void launch_rowmax_scale(const float* x, float* y, int rows, int cols, cudaStream_t s) {
    rowmax_scale_kernel<<<4, 64, 0, s>>>(x, y, rows, cols);
}
