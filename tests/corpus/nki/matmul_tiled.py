"""Tiled matmul with PSUM accumulation, tutorial style.

``lhsT`` arrives already transposed ([K, M]) so ``nl.matmul(..., transpose_x=True)``
feeds it to TensorE as the stationary operand directly.  A 3-deep loop nest (M tiles,
N tiles, K tiles) accumulates partial products in one fp32 PSUM tile with ``+=`` and
evicts it with ``nl.copy`` before the store.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

# Static findings this kernel has on purpose (tutorial-level tiling: operand tiles are reloaded for every output tile).
EXPECTED_FINDINGS = ["nki.hoistable-load"]
KERNEL = "matmul_tiled_kernel"
REFERENCE = "matmul_tiled_ref"


@nki.jit
def matmul_tiled_kernel(lhsT, rhs):
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "contraction dimensions differ"
    TM = nl.tile_size.gemm_stationary_fmax  # 128
    TK = nl.tile_size.pmax  # 128
    TN = nl.tile_size.gemm_moving_fmax  # 512

    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                a_tile = nl.load(lhsT[nl.ds(k * TK, TK), nl.ds(m * TM, TM)])
                b_tile = nl.load(rhs[nl.ds(k * TK, TK), nl.ds(n * TN, TN)])
                acc += nl.matmul(a_tile, b_tile, transpose_x=True)
            res = nl.copy(acc, dtype=result.dtype)
            nl.store(result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=res)
    return result


def matmul_tiled_ref(lhsT, rhs):
    return (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32)


CASES = [
    {
        "name": "fp32_k256_m256_n1024",
        "atol": 1e-4,  # K-term dot products can cancel towards 0
        "inputs": [
            {"name": "lhsT", "shape": [256, 256], "dtype": "float32"},
            {"name": "rhs", "shape": [256, 1024], "dtype": "float32"},
        ],
    },
    {
        "name": "fp32_k384_m128_n512",
        "atol": 1e-4,  # K-term dot products can cancel towards 0
        "inputs": [
            {"name": "lhsT", "shape": [384, 128], "dtype": "float32", "dist": "uniform"},
            {"name": "rhs", "shape": [384, 512], "dtype": "float32", "dist": "uniform"},
        ],
    },
]
