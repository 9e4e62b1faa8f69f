"""Row-wise sum, max, min and mean of a [rows, cols] tensor, returned as four outputs.

Index grids come from ``nl.mgrid`` used through ``.p/.x``; reductions use an integer
``axis=1`` with ``keepdims=True``.  The ragged last row tile is masked on the load and
on each of the four stores.
"""
import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "row_reductions_kernel"
REFERENCE = "row_reductions_ref"


@nki.jit
def row_reductions_kernel(x):
    rows, cols = x.shape
    sums = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    maxs = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    mins = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    means = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)

    g = nl.mgrid[0:128, 0:cols]
    r = nl.mgrid[0:128, 0:1]
    for t in nl.affine_range(math.ceil(rows / 128)):
        xt = nl.load(x[t * 128 + g.p, g.x], mask=(t * 128 + g.p < rows))
        live = t * 128 + r.p < rows
        nl.store(sums[t * 128 + r.p, r.x], value=nl.sum(xt, axis=1, keepdims=True), mask=live)
        nl.store(maxs[t * 128 + r.p, r.x], value=nl.max(xt, axis=1, keepdims=True), mask=live)
        nl.store(mins[t * 128 + r.p, r.x], value=nl.min(xt, axis=1, keepdims=True), mask=live)
        nl.store(means[t * 128 + r.p, r.x], value=nl.mean(xt, axis=1, keepdims=True), mask=live)
    return sums, maxs, mins, means


def row_reductions_ref(x):
    x64 = x.astype(np.float64)
    return tuple(
        f(x64, axis=1, keepdims=True).astype(np.float32) for f in (np.sum, np.max, np.min, np.mean)
    )


CASES = [
    {
        "name": "fp32_200x384",
        "inputs": [{"name": "x", "shape": [200, 384], "dtype": "float32", "mean": 1.0}],
    },
    {
        "name": "fp32_128x2048",
        "inputs": [{"name": "x", "shape": [128, 2048], "dtype": "float32", "dist": "uniform", "low": 0.0, "high": 4.0}],
    },
]
