"""Blocked bf16 matmul C = lhsT.T @ rhs for a wide right operand, fp32 PSUM accumulation.

rhs is walked in column blocks of 1024 so the kernel's SBUF footprint stays bounded for any N:
each block [K, 1024] is loaded once (2 KiB per partition per K-tile), together with lhsT [K, M],
and reused by every 128-row block of C.
Within a block the two 512-wide moving tiles of each row block accumulate over K in their own
PSUM bank and are evicted, with the bf16 cast fused, into one [128, 1024] tile stored at once.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

BLOCK_N = 1024


@nki.jit
def matmul_blocked_kernel(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax
    assert K == K2 and K % TK == 0 and M % TM == 0 and N % BLOCK_N == 0
    KT = K // TK
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    for b in nl.affine_range(N // BLOCK_N):
        lhs_sb = nl.ndarray((TK, KT * M), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            lhs_sb[:, k * M:(k + 1) * M] = nl.load(lhsT[k * TK:(k + 1) * TK, :])
        rhs_block = nl.ndarray((TK, KT * BLOCK_N), dtype=rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            rhs_block[:, k * BLOCK_N:(k + 1) * BLOCK_N] = nl.load(rhs[k * TK:(k + 1) * TK, b * BLOCK_N:(b + 1) * BLOCK_N])
        for m in nl.affine_range(M // TM):
            c_block = nl.ndarray((TM, BLOCK_N), dtype=lhsT.dtype, buffer=nl.sbuf)
            for n in nl.affine_range(BLOCK_N // TN):
                acc = nl.zeros((TM, TN), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(KT):
                    stationary = lhs_sb[:, k * M + m * TM:k * M + (m + 1) * TM]
                    moving = rhs_block[:, k * BLOCK_N + n * TN:k * BLOCK_N + (n + 1) * TN]
                    acc += nisa.nc_matmul(stationary, moving)
                c_block[:, n * TN:(n + 1) * TN] = nisa.tensor_copy(acc, dtype=lhsT.dtype)
            nl.store(out[m * TM:(m + 1) * TM, b * BLOCK_N:(b + 1) * BLOCK_N], value=c_block)
    return out
