"""Naive tiled matmul: both operand tiles are re-loaded inside the innermost loop.

C[M, N] = lhsT[K, M]^T @ rhs[K, N] with bf16 operands and fp32 PSUM.  The lhsT tile
depends only on (m, k) yet is fetched again for every n; the rhs tile depends only on
(k, n) yet is fetched again for every m, so HBM traffic is (N/512 + M/128) times what
the data needs.  The 128-column bf16 lhsT tiles are also only 256 B per partition.
Partner: ``matmul_hoist_opt.py``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "matmul_naive_kernel"
REFERENCE = "matmul_ref"
EXPECTED_FINDINGS = ["nki.hoistable-load", "nki.small-dma"]


@nki.jit
def matmul_naive_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nl.matmul(a, b, transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc, dtype=nl.bfloat16))
    return out


def matmul_ref(lhsT, rhs):
    import ml_dtypes

    return (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)


CASES = [
    {
        "name": "bf16_k512_m512_n1024",
        "inputs": [
            {"name": "lhsT", "shape": [512, 512], "dtype": "bfloat16"},
            {"name": "rhs", "shape": [512, 1024], "dtype": "bfloat16"},
        ],
        "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1,
    },
]
