"""C = x @ y with x [M, 128] in its natural layout, nki 0.3+ style: ``nl.matmul(x_tile, y_tile)``
without ``transpose_x=True`` has the compiler transpose every x tile on TensorE (through PSUM)
before the multiply. Partner: ``matmul_layout_opt.py``."""
import numpy as np

import nki
import nki.language as nl

KERNEL = "matmul_layout_naive_kernel"
REFERENCE = "matmul_layout_naive_ref"
EXPECTED_FINDINGS = ["nki.matmul-implicit-transpose"]


@nki.jit
def matmul_layout_naive_kernel(x, y):
    M, K = x.shape
    _, N = y.shape
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    y_sb = nl.load(y)
    for m in range(M // 128):
        x_tile = nl.load(x[m * 128:(m + 1) * 128, :])
        for n in range(N // 512):
            prod = nl.matmul(x_tile, y_sb[:, n * 512:(n + 1) * 512])
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(prod, dtype=nl.bfloat16))
    return out


def matmul_layout_naive_ref(x, y):
    import ml_dtypes

    return (x.astype(np.float64) @ y.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)


CASES = [
    {"name": "bf16_m512_k128_n1024", "inputs": [{"name": "x", "shape": [512, 128], "dtype": "bfloat16"},
                                                {"name": "y", "shape": [128, 1024], "dtype": "bfloat16"}],
     "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1},
]
