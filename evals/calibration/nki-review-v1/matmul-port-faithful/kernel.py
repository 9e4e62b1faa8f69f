"""C = A @ B with fp16 inputs and output and fp32 accumulation, ported from kernel.cu.

The CUDA kernel's 16 x 16 shared-memory tiles become TensorE tiles: K goes on the partitions,
[128 K, 128 M] stationary and [128 K, N <= 512] moving, accumulating over K in one fp32 PSUM bank
(the per-thread float accumulator). A arrives row-major [M, K], so each 128 x 128 block of it is
transposed once on TensorE and kept in SBUF; B is loaded once. Everything is read from HBM once.
M and K are multiples of 128 and N of at most 512 (asserted).
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_tiled(A, B):
    M, K = A.shape
    _, N = B.shape
    P = nl.tile_size.pmax
    assert M % P == 0 and K % P == 0 and N <= nl.tile_size.gemm_moving_fmax
    KT = K // P
    C = nl.ndarray((M, N), dtype=A.dtype, buffer=nl.shared_hbm)

    b_sb = nl.ndarray((P, KT * N), dtype=B.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        b_sb[:, k * N:(k + 1) * N] = nl.load(B[k * P:(k + 1) * P, :])

    for m in nl.affine_range(M // P):
        a_rows = nl.load(A[m * P:(m + 1) * P, :])  # [128 M, K]
        aT = nl.ndarray((P, KT * P), dtype=A.dtype, buffer=nl.sbuf)  # K-tile k: [128 K, 128 M]
        for k in nl.affine_range(KT):
            aT[:, k * P:(k + 1) * P] = nisa.tensor_copy(
                nisa.nc_transpose(a_rows[:, k * P:(k + 1) * P], engine=nisa.tensor_engine), dtype=A.dtype)
        acc = nl.zeros((P, N), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(KT):
            acc += nisa.nc_matmul(aT[:, k * P:(k + 1) * P], b_sb[:, k * N:(k + 1) * N])
        nl.store(C[m * P:(m + 1) * P, :], value=nisa.tensor_copy(acc, dtype=A.dtype))
    return C
