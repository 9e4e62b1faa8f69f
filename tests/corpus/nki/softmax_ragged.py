"""Row softmax over a [rows, cols] tensor whose row count is not a multiple of 128.

Tutorial style: ``nl.arange`` lifts, a mask on every call for the ragged last tile,
``nl.max(..., keepdims=True)`` for the stabiliser and ``nl.sum`` *without* keepdims for
the denominator, whose [P] result divides the [P, F] numerator per partition.
"""
import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

# Static findings this kernel has on purpose (tutorial style: subtract then exp instead of activation(exp, bias=-max)).
EXPECTED_FINDINGS = ["nki.unfused-activation"]
KERNEL = "softmax_ragged_kernel"
REFERENCE = "softmax_ragged_ref"


@nki.jit
def softmax_ragged_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range(math.ceil(rows / 128)):
        live = t * 128 + i_p < rows
        tile = nl.load(x[t * 128 + i_p, i_f], mask=live)
        row_max = nl.max(tile, axis=[1], keepdims=True, mask=live)
        shifted = nl.subtract(tile, row_max, mask=live)
        num = nl.exp(shifted, mask=live)
        den = nl.sum(num, axis=[1], mask=live)
        probs = nl.divide(num, den, mask=live)
        nl.store(out[t * 128 + i_p, i_f], value=probs, mask=live)
    return out


def softmax_ragged_ref(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


CASES = [
    {
        "name": "fp32_300x256",
        "inputs": [{"name": "x", "shape": [300, 256], "dtype": "float32", "std": 3.0}],
    },
    {
        "name": "fp32_77x1000",
        "inputs": [{"name": "x", "shape": [77, 1000], "dtype": "float32", "std": 2.0}],
    },
]
