"""Cumulative sum along the free axis with ``nisa.tensor_tensor_scan``, old output style.

The output ``y`` is a trailing parameter and the kernel returns nothing.  Each row
tile scans 512 columns at a time (r[i] = 1 * r[i-1] + x[i]); the last column of one
chunk seeds the next through a [P, 1] carry tile, a true loop-carried dependency, so
the column loop is a ``sequential_range``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "cumsum_kernel"
REFERENCE = "cumsum_ref"


@nki.jit
def cumsum_kernel(x, y):
    rows, cols = x.shape
    chunk = 512
    for r in nl.affine_range(rows // 128):
        ones = nl.ones((128, chunk), dtype=nl.float32)
        carry = nl.zeros((128, 1), dtype=nl.float32)
        for c in nl.sequential_range(cols // chunk):
            xt = nl.load(x[r * 128:(r + 1) * 128, c * chunk:(c + 1) * chunk])
            run = nisa.tensor_tensor_scan(ones, xt, initial=carry, op0=np.multiply, op1=np.add,
                                          dtype=nl.float32)
            carry[...] = nl.copy(run[:, chunk - 1:chunk])
            nl.store(y[r * 128:(r + 1) * 128, c * chunk:(c + 1) * chunk], value=run)


def cumsum_ref(x):
    return np.cumsum(x.astype(np.float64), axis=1).astype(np.float32)


CASES = [
    {
        "name": "fp32_256x1536_uniform",
        "inputs": [{"name": "x", "shape": [256, 1536], "dtype": "float32", "dist": "uniform", "low": 0.0, "high": 1.0}],
        "outputs": [{"name": "y", "shape": [256, 1536], "dtype": "float32"}],
    },
    {
        "name": "fp32_128x1024_normal",
        "inputs": [{"name": "x", "shape": [128, 1024], "dtype": "float32", "mean": 0.5}],
        "outputs": [{"name": "y", "shape": [128, 1024], "dtype": "float32"}],
        "rel_l2": 2e-5, "rtol": 1e-4, "atol": 1e-3,
    },
]
