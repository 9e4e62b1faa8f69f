"""Swap the two free axes of a [rows, A, B] tensor: out[r, b, a] = x[r, a, b].

A free-axis transpose needs no TensorE: ``nl.copy`` reads the SBUF tile through a
permuted ``nl.mgrid`` index.  The grid is used through its ``.p/.x/.y`` attributes, and
rows are walked in 128-partition tiles.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "transpose_free_kernel"
REFERENCE = "transpose_free_ref"


@nki.jit
def transpose_free_kernel(x):
    R, A, B = x.shape
    out = nl.ndarray((R, B, A), dtype=x.dtype, buffer=nl.shared_hbm)
    g = nl.mgrid[0:128, 0:B, 0:A]
    for r in nl.affine_range(R // 128):
        x_tile = nl.load(x[r * 128:(r + 1) * 128, :, :])
        y_tile = nl.ndarray((128, B, A), dtype=x.dtype, buffer=nl.sbuf)
        y_tile[g.p, g.x, g.y] = nl.copy(x_tile[g.p, g.y, g.x])
        nl.store(out[r * 128:(r + 1) * 128, :, :], value=y_tile)
    return out


def transpose_free_ref(x):
    return np.ascontiguousarray(np.transpose(x, (0, 2, 1)))


CASES = [
    {
        "name": "fp32_256x8x24",
        "inputs": [{"name": "x", "shape": [256, 8, 24], "dtype": "float32"}],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
    {
        "name": "bf16_128x16x4",
        "inputs": [{"name": "x", "shape": [128, 16, 4], "dtype": "bfloat16"}],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
]
