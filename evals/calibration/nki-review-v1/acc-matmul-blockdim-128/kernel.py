"""C = lhsT.T @ rhs in bf16 with fp32 PSUM accumulation, operands staged in block-dimension buffers.

K lies on the partitions of both operands (the left operand comes transposed), so no transposes are
needed. Every K-tile of lhsT ([128, M]) and every [128 K, 128 N] block of rhs is loaded once into
SBUF buffers whose leading block dimensions index the K-tile and the column block; the compute
loops walk those block dimensions: stationary lhs_sb[k][:, m-block], moving rhs_sb[k, n], each
product accumulated in place in a [128, 128] fp32 PSUM tile and evicted with the bf16 cast.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

TN = 128  # columns of C per moving tile


@nki.jit
def matmul_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    TK, TM = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    assert K % TK == 0 and M % TM == 0 and N % TN == 0
    KT, NT = K // TK, N // TN
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    lhs_sb = nl.ndarray((KT, nl.par_dim(TK), M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_sb = nl.ndarray((KT, NT, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        lhs_sb[k] = nl.load(lhsT[k * TK:(k + 1) * TK, :])
        for n in nl.affine_range(NT):
            rhs_sb[k, n] = nl.load(rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])

    for m in nl.affine_range(M // TM):
        row_block = nl.ndarray((TM, N), dtype=lhsT.dtype, buffer=nl.sbuf)
        for n in nl.affine_range(NT):
            acc = nl.zeros((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                acc += nisa.nc_matmul(lhs_sb[k][:, m * TM:(m + 1) * TM], rhs_sb[k, n])
            row_block[:, n * TN:(n + 1) * TN] = nisa.tensor_copy(acc, dtype=lhsT.dtype)
        nl.store(out[m * TM:(m + 1) * TM, :], value=row_block)
    return out
