"""Matmul whose left operand is loaded in natural [M, K] layout.

``nl.matmul(x, y)`` without ``transpose_x`` makes the compiler transpose ``x`` on
TensorE before every multiply; the values are the same as the transposed form.  K is
split into 128-wide slices that accumulate in PSUM with ``acc[...] +=``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

# Static findings this kernel has on purpose (the natural-layout operand is the point of this kernel; its loads are not hoisted).
EXPECTED_FINDINGS = ["nki.matmul-implicit-transpose", "nki.hoistable-load"]
KERNEL = "matmul_no_transpose_kernel"
REFERENCE = "matmul_no_transpose_ref"


@nki.jit
def matmul_no_transpose_kernel(x, y):
    M, K = x.shape
    _, N = y.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        acc = nl.zeros((128, N), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(K // 128):
            x_tile = nl.load(x[m * 128:(m + 1) * 128, k * 128:(k + 1) * 128])
            y_tile = nl.load(y[k * 128:(k + 1) * 128, :])
            acc[...] += nl.matmul(x_tile, y_tile)
        nl.store(out[m * 128:(m + 1) * 128, :], value=nl.copy(acc))
    return out


def matmul_no_transpose_ref(x, y):
    return (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float32)


CASES = [
    {
        "name": "fp32_m256_k256_n384",
        "atol": 1e-4,  # K-term dot products can cancel towards 0
        "inputs": [
            {"name": "x", "shape": [256, 256], "dtype": "float32"},
            {"name": "y", "shape": [256, 384], "dtype": "float32"},
        ],
    },
]
