"""RMSNorm over the last axis, tutorial style: y = x / sqrt(mean(x^2) + eps) * g.

The 1-D weight is reshaped to [1, D] on HBM, loaded once and broadcast to 128
partitions with the tensor method ``.broadcast_to``.  ``nl.sum`` without keepdims
yields a [P] tile that later scales the [P, D] tile per partition.  Only the load,
the last multiply and the store are masked for the ragged last tile.
"""
import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "rmsnorm_kernel"
REFERENCE = "rmsnorm_ref"


@nki.jit
def rmsnorm_kernel(a, g, eps):
    rows, D = a.shape
    out = nl.ndarray((rows, D), dtype=a.dtype, buffer=nl.shared_hbm)

    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(D)[None, :]
    g_row = nl.load(g.reshape((1, D))[nl.arange(1)[:, None], i_f])
    g_all = g_row.broadcast_to((128, D))

    for t in nl.affine_range(math.ceil(rows / 128)):
        live = t * 128 + i_p < rows
        x = nl.load(a[t * 128 + i_p, i_f], mask=live)
        sq_sum = nl.sum(nl.square(x), axis=[1])
        mean_sq = sq_sum / D
        inv_rms = nl.rsqrt(mean_sq + eps)
        y = nl.multiply(x, inv_rms)
        y = nl.multiply(y, g_all, mask=live)
        nl.store(out[t * 128 + i_p, i_f], value=y, mask=live)
    return out


def rmsnorm_ref(a, g, eps):
    x = a.astype(np.float64)
    inv = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps)
    return (x * inv * g.astype(np.float64)[None, :]).astype(a.dtype)


CASES = [
    {
        "name": "fp32_300x512",
        "inputs": [
            {"name": "a", "shape": [300, 512], "dtype": "float32"},
            {"name": "g", "shape": [512], "dtype": "float32", "dist": "uniform", "low": 0.5, "high": 1.5},
        ],
        "args": [1e-6],
    },
    {
        "name": "fp32_128x1024",
        "inputs": [
            {"name": "a", "shape": [128, 1024], "dtype": "float32", "std": 4.0},
            {"name": "g", "shape": [1024], "dtype": "float32"},
        ],
        "args": [1e-5],
    },
]
