"""C = A @ B with fp16 inputs and output and fp32 accumulation, ported from kernel.cu.

The port keeps the CUDA tiling: one 16 x 16 output tile at a time (a CUDA block), walking K in
16-wide steps; each step loads the A and B tiles a block would stage in shared memory and
multiplies them on TensorE, accumulating in an fp32 PSUM tile (the threads' float accumulators).
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE = 16


@nki.jit
def matmul_tiled(A, B):
    M, K = A.shape
    _, N = B.shape
    assert M % TILE == 0 and N % TILE == 0 and K % TILE == 0
    C = nl.ndarray((M, N), dtype=A.dtype, buffer=nl.shared_hbm)

    for by in nl.affine_range(M // TILE):  # blockIdx.y
        for bx in nl.affine_range(N // TILE):  # blockIdx.x
            acc = nl.zeros((TILE, TILE), dtype=nl.float32, buffer=nl.psum)
            for t in nl.affine_range(K // TILE):
                As = nl.load(A[by * TILE:(by + 1) * TILE, t * TILE:(t + 1) * TILE])
                Bs = nl.load(B[t * TILE:(t + 1) * TILE, bx * TILE:(bx + 1) * TILE])
                acc += nl.matmul(As, Bs)
            nl.store(C[by * TILE:(by + 1) * TILE, bx * TILE:(bx + 1) * TILE], value=nl.copy(acc, dtype=A.dtype))
    return C
