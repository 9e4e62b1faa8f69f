"""Row sum, max, min and mean of a [rows, cols] tensor with a ragged last row tile, nki 0.3+ style.

``nisa.tensor_reduce`` writes each statistic into a [n, 1] SBUF tile (dst first, returns nothing);
the mean comes from the ``nl.mean`` convenience. Only the valid rows are loaded, reduced and stored.
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "row_reductions_kernel"
REFERENCE = "row_reductions_ref"


@nki.jit
def row_reductions_kernel(x):
    rows, cols = x.shape
    sums = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    maxs = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    mins = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    means = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in range((rows + 127) // 128):
        lo = t * 128
        n = min(rows, lo + 128) - lo
        xt = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt[0:n, :], src=x[lo:lo + n, :])
        for out, op in ((sums, nl.add), (maxs, nl.maximum), (mins, nl.minimum)):
            red = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_reduce(dst=red[0:n, :], op=op, data=xt[0:n, :], axis=1, keepdims=True)
            nisa.dma_copy(dst=out[lo:lo + n, :], src=red[0:n, :])
        nl.store(means[lo:lo + n, :], value=nl.mean(xt[0:n, :], axis=1, keepdims=True, dtype=nl.float32))
    return sums, maxs, mins, means


def row_reductions_ref(x):
    x64 = x.astype(np.float64)
    return tuple(f(x64, axis=1, keepdims=True).astype(np.float32) for f in (np.sum, np.max, np.min, np.mean))


CASES = [
    {"name": "fp32_200x384", "inputs": [{"name": "x", "shape": [200, 384], "dtype": "float32", "mean": 1.0}]},
    {"name": "fp32_128x2048", "inputs": [{"name": "x", "shape": [128, 2048], "dtype": "float32", "dist": "uniform",
                                          "low": 0.0, "high": 4.0}]},
]
