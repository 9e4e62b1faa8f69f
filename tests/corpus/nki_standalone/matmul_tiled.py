"""Tiled matmul, nki 0.3+ tutorial style: ``nisa.nc_matmul(dst, stationary, moving)`` into a fresh
PSUM tile per output tile (the first matmul overwrites it, the later ones accumulate), then
``tensor_copy`` evicts PSUM to SBUF (DMA cannot read PSUM in 0.3+) before the store."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "matmul_tiled_kernel"
REFERENCE = "matmul_tiled_ref"
EXPECTED_FINDINGS = ["nki.hoistable-load"]  # tutorial-level: operand tiles reloaded for every output tile


@nki.jit
def matmul_tiled_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    TM, TK, TN = nl.tile_size.gemm_stationary_fmax, nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in range(M // TM):
        for n in range(N // TN):
            acc = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // TK):
                a = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                nisa.dma_copy(dst=b, src=rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                nisa.nc_matmul(acc, a, b)
            res = nl.ndarray((TM, TN), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=result[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], src=res)
    return result


def matmul_tiled_ref(lhsT, rhs):
    return (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32)


CASES = [
    {"name": "fp32_k256_m256_n1024", "atol": 1e-4, "inputs": [
        {"name": "lhsT", "shape": [256, 256], "dtype": "float32"},
        {"name": "rhs", "shape": [256, 1024], "dtype": "float32"}]},
    {"name": "bf16_k384_m128_n512", "rel_l2": 2e-5, "atol": 1e-4, "inputs": [
        {"name": "lhsT", "shape": [384, 128], "dtype": "bfloat16", "dist": "uniform"},
        {"name": "rhs", "shape": [384, 512], "dtype": "bfloat16", "dist": "uniform"}]},
]
