"""Row softmax over [rows, cols] with a ragged last row tile, nki 0.3+ convenience APIs.

``nl.load``/``nl.store`` (back in 0.3) move the valid rows only; ``nl.max``, ``nl.exp``,
``nl.sum`` and ``nl.divide`` return new tiles. Rows past the end are never loaded or stored.
"""
import numpy as np

import nki
import nki.language as nl

KERNEL = "softmax_ragged_kernel"
REFERENCE = "softmax_ragged_ref"
EXPECTED_FINDINGS = ["nki.unfused-activation"]  # exp(x - max) as two passes, as the beta original


@nki.jit
def softmax_ragged_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range((rows + 127) // 128):
        lo = t * 128
        hi = min(rows, lo + 128)
        tile = nl.load(x[lo:hi, :], dtype=nl.float32)
        row_max = nl.max(tile, axis=1, keepdims=True)
        e = nl.exp(nl.subtract(tile, row_max))
        total = nl.sum(e, axis=1, keepdims=True)
        nl.store(out[lo:hi, :], value=nl.divide(e, total, dtype=x.dtype))
    return out


def softmax_ragged_ref(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


CASES = [
    {"name": "fp32_300x256", "inputs": [{"name": "x", "shape": [300, 256], "dtype": "float32", "std": 3.0}]},
    {"name": "fp32_77x128", "inputs": [{"name": "x", "shape": [77, 128], "dtype": "float32"}]},
]
