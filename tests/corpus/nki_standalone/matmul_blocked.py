"""Blocked matmul with hoisted loads: lists of SBUF tiles instead of block dimensions (0.2+).

The lhsT strip of an M block (one [128, 128 * block_m] DMA per K tile) and the rhs tiles of an N
block are loaded once into Python lists and reused for every output tile of the block pair; each
output tile accumulates over K in its own PSUM tile; results leave in bf16 through a casting
``tensor_copy``. The rhs blocks are re-read for every M block, the blocking trade-off for operands
larger than SBUF; at the test shapes all of rhs would fit, which the static rule notes.
"""
import ml_dtypes
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "matmul_blocked_kernel"
REFERENCE = "matmul_blocked_ref"
EXPECTED_FINDINGS = ["nki.hoistable-load"]


@nki.jit
def matmul_blocked_kernel(lhsT, rhs, block_m=2, block_n=2):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for mb in range(M // (128 * block_m)):
        lhs_strips = []
        m0 = mb * block_m * 128
        for k in range(KT):
            t = nl.ndarray((128, 128 * block_m), dtype=lhsT.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=lhsT[k * 128:(k + 1) * 128, m0:m0 + 128 * block_m])
            lhs_strips.append(t)
        for nb in range(N // (512 * block_n)):
            rhs_tiles = []
            for bn in range(block_n):
                n0 = (nb * block_n + bn) * 512
                col = []
                for k in range(KT):
                    t = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                    nisa.dma_copy(dst=t, src=rhs[k * 128:(k + 1) * 128, n0:n0 + 512])
                    col.append(t)
                rhs_tiles.append(col)
            for bm in range(block_m):
                for bn in range(block_n):
                    acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                    for k in range(KT):
                        nisa.nc_matmul(dst=acc, stationary=lhs_strips[k][:, bm * 128:(bm + 1) * 128],
                                       moving=rhs_tiles[bn][k])
                    res = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=res, src=acc)
                    m0, n0 = (mb * block_m + bm) * 128, (nb * block_n + bn) * 512
                    nisa.dma_copy(dst=out[m0:m0 + 128, n0:n0 + 512], src=res)
    return out


def matmul_blocked_ref(lhsT, rhs, block_m=2, block_n=2):
    r = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    return r.astype(np.float32).astype(ml_dtypes.bfloat16)


CASES = [
    {"name": "bf16_k256_m512_n2048", "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1, "inputs": [
        {"name": "lhsT", "shape": [256, 512], "dtype": "bfloat16"},
        {"name": "rhs", "shape": [256, 2048], "dtype": "bfloat16"}]},
    {"name": "bf16_blocks_1x1", "kwargs": {"block_m": 1, "block_n": 1}, "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1,
     "inputs": [{"name": "lhsT", "shape": [128, 256], "dtype": "bfloat16"},
                {"name": "rhs", "shape": [128, 1024], "dtype": "bfloat16"}]},
]
