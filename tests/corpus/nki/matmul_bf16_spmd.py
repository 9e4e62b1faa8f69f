"""bf16 matmul on a 2-D SPMD grid: bf16 operands, fp32 PSUM accumulation, bf16 eviction.

Each program instance computes one [128, 512] output tile, picked with
``nl.program_id(0)`` / ``nl.program_id(1)``, and loops over K with ``+=`` into PSUM.
The accumulator stays fp32 until the single cast on eviction (``nl.copy(..., dtype=)``).
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "matmul_bf16_spmd_kernel"
REFERENCE = "matmul_bf16_spmd_ref"


@nki.jit
def matmul_bf16_spmd_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)

    m0 = nl.program_id(0) * 128
    n0 = nl.program_id(1) * 512
    i_k = nl.arange(128)[:, None]
    i_m = nl.arange(128)[None, :]
    i_n = nl.arange(512)[None, :]

    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        a = nl.load(lhsT[k * 128 + i_k, m0 + i_m])
        b = nl.load(rhs[k * 128 + i_k, n0 + i_n])
        acc += nl.matmul(a, b, transpose_x=True)
    nl.store(out[m0 + nl.arange(128)[:, None], n0 + i_n], value=nl.copy(acc, dtype=nl.bfloat16))
    return out


def matmul_bf16_spmd_ref(lhsT, rhs):
    import ml_dtypes

    exact = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    return exact.astype(np.float32).astype(ml_dtypes.bfloat16)


CASES = [
    {
        "name": "grid2x2_k512",
        "grid": [2, 2],
        "inputs": [
            {"name": "lhsT", "shape": [512, 256], "dtype": "bfloat16"},
            {"name": "rhs", "shape": [512, 1024], "dtype": "bfloat16"},
        ],
        "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1,
    },
]
