"""The four stages of the NKI matmul tutorial, written for this project (beta dialect), for validating
the cost model against the tutorial's trn1 measurements (REFERENCE §5.2):

    stage                      published latency   what changes
    tiled                      51.80 ms            loads inside the K loop
    hoisted                    42.96 ms            lhsT column block hoisted per M tile, rhs block per N tile
    blocked free dimensions    22.07 ms            2 x 2 output tiles share each loaded block
    fully optimised            6.97 ms             16 x 2 x 8 blocking, K blocks in sequential order

All take lhsT [K, M] and rhs [K, N] (bf16) and return [M, N] in bf16.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

TM, TK, TN = 128, 128, 512  # stationary free size, contraction tile, moving free size


@nki.jit
def tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                b = nl.load(rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                acc += nl.matmul(a, b, transpose_x=True)
            nl.store(out[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=nl.copy(acc, dtype=out.dtype))
    return out


@nki.jit
def hoisted(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // TK
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        a_col = nl.ndarray((KT, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(KT):
            a_col[k] = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
        for n in nl.affine_range(N // TN):
            b_col = nl.ndarray((KT, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(KT):
                b_col[k] = nl.load(rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                acc += nl.matmul(a_col[k], b_col[k], transpose_x=True)
            nl.store(out[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=nl.copy(acc, dtype=out.dtype))
    return out


@nki.jit
def blocked_free(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, BM, BN = K // TK, 2, 2  # 2 x 2 output tiles per block
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // (BM * TM)):
        a_blk = nl.ndarray((BM, KT, nl.par_dim(TK), TM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in nl.affine_range(BM):
            for k in nl.affine_range(KT):
                col = (m * BM + bm) * TM
                a_blk[bm, k] = nl.load(lhsT[k * TK:(k + 1) * TK, col:col + TM])
        for n in nl.affine_range(N // (BN * TN)):
            b_blk = nl.ndarray((BN, KT, nl.par_dim(TK), TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in nl.affine_range(BN):
                for k in nl.affine_range(KT):
                    col = (n * BN + bn) * TN
                    b_blk[bn, k] = nl.load(rhs[k * TK:(k + 1) * TK, col:col + TN])
            for bm in nl.affine_range(BM):
                for bn in nl.affine_range(BN):
                    acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(KT):
                        acc += nl.matmul(a_blk[bm, k], b_blk[bn, k], transpose_x=True)
                    row, col = (m * BM + bm) * TM, (n * BN + bn) * TN
                    nl.store(out[row:row + TM, col:col + TN], value=nl.copy(acc, dtype=out.dtype))
    return out


@nki.jit
def fully_optimised(lhsT, rhs, BM=16, BN=2, BK=8):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    NM = M // (BM * TM)
    for n in nl.affine_range(N // (BN * TN)):
        # partial sums of one N block for every M block, kept on chip across the K blocks
        part = nl.zeros((NM, BM, BN, nl.par_dim(TM), TN), dtype=lhsT.dtype, buffer=nl.sbuf)
        for kb in nl.sequential_range(K // (BK * TK)):
            b_blk = nl.ndarray((BK, nl.par_dim(TK), BN * TN), dtype=rhs.dtype, buffer=nl.sbuf)
            for bk in nl.affine_range(BK):
                row = (kb * BK + bk) * TK
                b_blk[bk] = nl.load(rhs[row:row + TK, n * BN * TN:(n + 1) * BN * TN])
            for m in nl.affine_range(NM):
                a_blk = nl.ndarray((BK, nl.par_dim(TK), BM * TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                for bk in nl.affine_range(BK):
                    row = (kb * BK + bk) * TK
                    a_blk[bk] = nl.load(lhsT[row:row + TK, m * BM * TM:(m + 1) * BM * TM])
                for bn in nl.affine_range(BN):
                    for bm in nl.affine_range(BM):
                        acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(BK):
                            acc += nl.matmul(a_blk[bk, :, bm * TM:(bm + 1) * TM],
                                             b_blk[bk, :, bn * TN:(bn + 1) * TN], transpose_x=True)
                        part[m, bm, bn] += acc
        for m in nl.affine_range(NM):
            for bm in nl.affine_range(BM):
                rows = nl.ndarray((nl.par_dim(TM), BN * TN), dtype=out.dtype, buffer=nl.sbuf)
                for bn in nl.affine_range(BN):
                    rows[:, bn * TN:(bn + 1) * TN] = nl.copy(part[m, bm, bn])
                r = (m * BM + bm) * TM
                nl.store(out[r:r + TM, n * BN * TN:(n + 1) * BN * TN], value=rows)  # one 2 KiB-per-partition store
    return out
