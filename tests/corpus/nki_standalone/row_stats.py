"""Row variance, product and all-positive flag with the ``nl`` reductions (without keepdims, the
[P] result stored into a [P, 1] column: same elements, another shape), nki 0.3+ style."""
import numpy as np

import nki
import nki.language as nl

KERNEL = "row_stats_kernel"
REFERENCE = "row_stats_ref"


@nki.jit
def row_stats_kernel(x):
    rows, cols = x.shape
    var_out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    prod_out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    all_pos_out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        nl.store(var_out[t * 128:(t + 1) * 128, :], value=nl.var(xt, axis=1, dtype=nl.float32))
        nl.store(prod_out[t * 128:(t + 1) * 128, :], value=nl.prod(xt, axis=1, dtype=nl.float32))
        positive = nl.greater(xt, 0.0, dtype=nl.float32)
        nl.store(all_pos_out[t * 128:(t + 1) * 128, :], value=nl.min(positive, axis=1, dtype=nl.float32))
    return var_out, prod_out, all_pos_out


def row_stats_ref(x):
    x64 = x.astype(np.float64)
    return (x64.var(axis=1, keepdims=True).astype(np.float32),
            x64.prod(axis=1, keepdims=True).astype(np.float32),
            (x > 0).all(axis=1, keepdims=True).astype(np.float32))


CASES = [
    {"name": "fp32_256x64_near_one", "inputs": [{"name": "x", "shape": [256, 64], "dtype": "float32",
                                                 "dist": "uniform", "low": 0.9, "high": 1.1}],
     "rtol": 1e-5, "atol": 1e-7},
    {"name": "fp32_128x32_mixed_signs", "inputs": [{"name": "x", "shape": [128, 32], "dtype": "float32",
                                                    "dist": "uniform", "low": -0.05, "high": 1.5}],
     "rtol": 1e-5, "atol": 1e-7},
]
