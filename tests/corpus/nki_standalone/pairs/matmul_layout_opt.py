"""C = x @ y with the left operand handed over K-major (xT [128, M]), nki 0.3+ style: its tiles go
straight to ``nisa.nc_matmul`` as stationary operands, no transpose. Partner: ``matmul_layout_naive.py``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "matmul_layout_opt_kernel"
REFERENCE = "matmul_layout_opt_ref"
EXPECTED_FINDINGS = []


@nki.jit
def matmul_layout_opt_kernel(xT, y):
    K, M = xT.shape
    _, N = y.shape
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    xT_sb = nl.load(xT)
    y_sb = nl.load(y)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(acc, xT_sb[:, m * 128:(m + 1) * 128], y_sb[:, n * 512:(n + 1) * 512])
            res = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return out


def matmul_layout_opt_ref(xT, y):
    import ml_dtypes

    return (xT.astype(np.float64).T @ y.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)


CASES = [
    {"name": "bf16_m512_k128_n1024", "inputs": [{"name": "xT", "shape": [128, 512], "dtype": "bfloat16"},
                                                {"name": "y", "shape": [128, 1024], "dtype": "bfloat16"}],
     "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1},
]
