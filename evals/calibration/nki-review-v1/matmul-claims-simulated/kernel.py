"""Tiled bf16 matmul C = lhsT.T @ rhs with fp32 accumulation in PSUM and a bf16 result.

K lies on the partitions in both operands (the task passes the left operand transposed), so
TensorE needs no transposes: stationary tiles are [128 K, 128 M], moving tiles [128 K, 512 N],
and each [128, 512] fp32 result fills one PSUM bank. At the task's size both operands fit on
chip (16 KiB per partition each), so every K-tile of both is loaded exactly once (2 KiB per
partition per transfer) before the compute loops; each 128-row block of C is evicted with the
bf16 cast fused into the copy and stored in one 2 KiB-per-partition transfer.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_kernel(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax
    assert K == K2 and K % TK == 0 and M % TM == 0 and N % TN == 0
    KT = K // TK
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    # K-tile k of each operand sits at free offset k * M (k * N) of one on-chip buffer.
    lhs_sb = nl.ndarray((TK, KT * M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_sb = nl.ndarray((TK, KT * N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        lhs_sb[:, k * M:(k + 1) * M] = nl.load(lhsT[k * TK:(k + 1) * TK, :])
        rhs_sb[:, k * N:(k + 1) * N] = nl.load(rhs[k * TK:(k + 1) * TK, :])

    for m in nl.affine_range(M // TM):
        row_block = nl.ndarray((TM, N), dtype=lhsT.dtype, buffer=nl.sbuf)
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                stationary = lhs_sb[:, k * M + m * TM:k * M + (m + 1) * TM]
                moving = rhs_sb[:, k * N + n * TN:k * N + (n + 1) * TN]
                acc += nisa.nc_matmul(stationary, moving)
            row_block[:, n * TN:(n + 1) * TN] = nisa.tensor_copy(acc, dtype=lhsT.dtype)
        nl.store(out[m * TM:(m + 1) * TM, :], value=row_block)
    return out
