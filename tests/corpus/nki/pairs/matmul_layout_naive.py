"""Matmul that feeds TensorE a non-transposed left operand.

C = x @ y with x [M, K] in its natural layout.  ``nl.matmul(x_tile, y_tile)`` without
``transpose_x=True`` makes the compiler insert a TensorE transpose of every [128, 128]
x tile before the multiply: M/128 * K/128 extra PE instructions plus PSUM round trips.
Loads are otherwise hoisted and wide.  Partner: ``matmul_layout_opt.py``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "matmul_layout_naive_kernel"
REFERENCE = "matmul_layout_naive_ref"
EXPECTED_FINDINGS = ["nki.matmul-implicit-transpose"]


@nki.jit
def matmul_layout_naive_kernel(x, y):
    M, K = x.shape
    _, N = y.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)

    y_sb = nl.ndarray((KT, nl.par_dim(128), N), dtype=y.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        y_sb[k] = nl.load(y[k * 128:(k + 1) * 128, :])

    for m in nl.affine_range(M // 128):
        x_strip = nl.load(x[m * 128:(m + 1) * 128, :])
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                acc += nl.matmul(x_strip[:, k * 128:(k + 1) * 128], y_sb[k, :, n * 512:(n + 1) * 512])
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc, dtype=nl.bfloat16))
    return out


def matmul_layout_naive_ref(x, y):
    import ml_dtypes

    return (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)


CASES = [
    {
        "name": "bf16_m512_k512_n512",
        "inputs": [
            {"name": "x", "shape": [512, 512], "dtype": "bfloat16"},
            {"name": "y", "shape": [512, 512], "dtype": "bfloat16"},
        ],
        "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1,
    },
]
