"""C = lhsT.T @ rhs in bf16; the two K-tile products of each output block are summed in bf16.

K = 256 lies on the partitions in two K-tiles. Both operands are loaded once (2 KiB per partition
per transfer). For each [128, 512] block of C, each K-tile's product is evicted from PSUM and
added into a bf16 SBUF accumulator on VectorE; the accumulator is stored as it is.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matmul_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    TK, TM, TN = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax, nl.tile_size.gemm_moving_fmax
    assert K % TK == 0 and M % TM == 0 and N % TN == 0
    KT = K // TK
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    lhs_sb = nl.ndarray((TK, KT * M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_sb = nl.ndarray((TK, KT * N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        lhs_sb[:, k * M:(k + 1) * M] = nl.load(lhsT[k * TK:(k + 1) * TK, :])
        rhs_sb[:, k * N:(k + 1) * N] = nl.load(rhs[k * TK:(k + 1) * TK, :])

    for m in nl.affine_range(M // TM):
        row_block = nl.ndarray((TM, N), dtype=lhsT.dtype, buffer=nl.sbuf)
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), dtype=lhsT.dtype, buffer=nl.sbuf)
            for k in nl.sequential_range(KT):
                part = nisa.nc_matmul(lhs_sb[:, k * M + m * TM:k * M + (m + 1) * TM],
                                      rhs_sb[:, k * N + n * TN:k * N + (n + 1) * TN])
                acc[...] = nisa.tensor_tensor(acc, part, np.add, dtype=lhsT.dtype)
            row_block[:, n * TN:(n + 1) * TN] = nisa.tensor_copy(acc)
        nl.store(out[m * TM:(m + 1) * TM, :], value=row_block)
    return out
