"""bf16 row softmax whose statistics (row max, exponentials, row sum) are kept in bf16, nki 0.3+
style with the ``nl`` conveniences; the max subtraction is also a separate pass that ScalarE could
fold into the exp as its bias. Partner: ``softmax_precision_opt.py``."""
import numpy as np

import nki
import nki.language as nl

KERNEL = "softmax_bf16_stats_kernel"
REFERENCE = "softmax_ref"
EXPECTED_FINDINGS = ["nki.low-precision-accumulator", "nki.unfused-activation"]


@nki.jit
def softmax_bf16_stats_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        row_max = nl.max(xt, axis=1, keepdims=True, dtype=nl.bfloat16)
        num = nl.exp(nl.subtract(xt, row_max, dtype=nl.bfloat16), dtype=nl.bfloat16)
        den = nl.sum(num, axis=1, keepdims=True, dtype=nl.bfloat16)
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.divide(num, den, dtype=nl.bfloat16))
    return out


def softmax_ref(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


CASES = [
    {"name": "bf16_256x1024", "inputs": [{"name": "x", "shape": [256, 1024], "dtype": "bfloat16", "std": 2.0}],
     "rel_l2": 2e-2, "rtol": 5e-2, "atol": 1e-4},
]
