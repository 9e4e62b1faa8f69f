// C[M, N] = A[M, K] @ B[K, N] with half inputs and output and float accumulation.
// One TILE x TILE output tile per block; each thread owns one element of it. The K dimension is
// walked one TILE-wide step at a time, both input tiles staged through shared memory.
// M, N and K are multiples of TILE.
#include <cuda_fp16.h>

#define TILE 16

__global__ void matmul_tiled(const __half* __restrict__ A, const __half* __restrict__ B,
                             __half* __restrict__ C, int M, int N, int K) {
    __shared__ __half As[TILE][TILE];
    __shared__ __half Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < K / TILE; ++t) {
        As[threadIdx.y][threadIdx.x] = A[row * K + t * TILE + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE; ++k)
            acc += __half2float(As[threadIdx.y][k]) * __half2float(Bs[k][threadIdx.x]);
        __syncthreads();
    }
    C[row * N + col] = __float2half(acc);
}

void launch_matmul(const __half* A, const __half* B, __half* C, int M, int N, int K, cudaStream_t s) {
    dim3 block(TILE, TILE);
    dim3 grid(N / TILE, M / TILE);
    matmul_tiled<<<grid, block, 0, s>>>(A, B, C, M, N, K);
}
