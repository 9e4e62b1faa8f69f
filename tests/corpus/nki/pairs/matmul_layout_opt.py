"""Matmul whose left operand is stored K-major in HBM, so TensorE takes it directly.

Same product as ``matmul_layout_naive.py`` (C = x @ y), but the caller hands over
xT = x^T ([K, M]) - the layout choice that removes transposes.  Tiles go to
``nl.matmul(..., transpose_x=True)`` as stationary operands with no PE transpose.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "matmul_layout_opt_kernel"
REFERENCE = "matmul_layout_opt_ref"
EXPECTED_FINDINGS = []


@nki.jit
def matmul_layout_opt_kernel(xT, y):
    K, M = xT.shape
    _, N = y.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)

    xT_sb = nl.ndarray((KT, nl.par_dim(128), M), dtype=xT.dtype, buffer=nl.sbuf)
    y_sb = nl.ndarray((KT, nl.par_dim(128), N), dtype=y.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        xT_sb[k] = nl.load(xT[k * 128:(k + 1) * 128, :])
        y_sb[k] = nl.load(y[k * 128:(k + 1) * 128, :])

    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                acc += nl.matmul(xT_sb[k, :, m * 128:(m + 1) * 128], y_sb[k, :, n * 512:(n + 1) * 512],
                                 transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc, dtype=nl.bfloat16))
    return out


def matmul_layout_opt_ref(xT, y):
    import ml_dtypes

    return (xT.astype(np.float64).T @ y.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)


CASES = [
    {
        "name": "bf16_m512_k512_n512",
        "inputs": [
            {"name": "xT", "shape": [512, 512], "dtype": "bfloat16"},
            {"name": "y", "shape": [512, 512], "dtype": "bfloat16"},
        ],
        "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1,
    },
]
