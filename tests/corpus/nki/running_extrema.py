"""Row-wise running maximum and minimum over column tiles with ``nl.loop_reduce``.

The maximum accumulates into a name that does not exist before the loop (its first
iteration starts it), reducing with ``np.max``; the minimum combines into a subscript of a
pre-declared tile with ``np.min``. Both are associative reductions, legal in an
``affine_range`` loop.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "running_extrema_kernel"
REFERENCE = "running_extrema_ref"


@nki.jit
def running_extrema_kernel(x):
    rows, cols = x.shape
    TF = 256
    hi_out = nl.ndarray((rows, TF), dtype=x.dtype, buffer=nl.shared_hbm)
    lo_out = nl.ndarray((rows, TF), dtype=x.dtype, buffer=nl.shared_hbm)
    lo = nl.ndarray((rows, TF), dtype=nl.float32)
    lo[...] = nl.load(x[:, 0:TF])
    for j in nl.affine_range(cols // TF):
        tile = nl.load(x[:, j * TF:(j + 1) * TF])
        hi = nl.loop_reduce(tile, op=np.max, loop_indices=[j], dtype=nl.float32)
        lo[...] = nl.loop_reduce(tile, op=np.min, loop_indices=[j], dtype=nl.float32)
    nl.store(hi_out, value=hi)
    nl.store(lo_out, value=lo)
    return hi_out, lo_out


def running_extrema_ref(x):
    tiles = x.astype(np.float32).reshape(x.shape[0], -1, 256)
    return tiles.max(axis=1), tiles.min(axis=1)


CASES = [
    {"name": "fp32_128x1024", "inputs": [{"name": "x", "shape": [128, 1024], "dtype": "float32"}]},
    {"name": "fp32_64x512", "inputs": [{"name": "x", "shape": [64, 512], "dtype": "float32", "dist": "uniform"}]},
]
