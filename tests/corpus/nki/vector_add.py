"""Element-wise add of two [rows, cols] tensors, tutorial style.

Rows are walked in 128-partition tiles with ``nl.arange`` lifts (``[:, None]`` for the
partition axis, ``[None, :]`` for the free axis).  The row count need not be a multiple
of 128: the last tile is ragged and every load, add and store carries the same mask.
"""
import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "vector_add_kernel"
REFERENCE = "vector_add_ref"


@nki.jit
def vector_add_kernel(a_input, b_input):
    rows, cols = a_input.shape
    out = nl.ndarray((rows, cols), dtype=a_input.dtype, buffer=nl.shared_hbm)

    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range(math.ceil(rows / 128)):
        row = t * 128 + i_p
        in_bounds = row < rows
        a_tile = nl.load(a_input[row, i_f], mask=in_bounds)
        b_tile = nl.load(b_input[row, i_f], mask=in_bounds)
        c_tile = nl.add(a_tile, b_tile, mask=in_bounds)
        nl.store(out[row, i_f], value=c_tile, mask=in_bounds)
    return out


def vector_add_ref(a, b):
    return (a.astype(np.float64) + b.astype(np.float64)).astype(a.dtype)


CASES = [
    {
        "name": "fp32_ragged_300x512",
        "inputs": [
            {"name": "a", "shape": [300, 512], "dtype": "float32"},
            {"name": "b", "shape": [300, 512], "dtype": "float32"},
        ],
    },
    {
        "name": "bf16_256x256",
        "inputs": [
            {"name": "a", "shape": [256, 256], "dtype": "bfloat16"},
            {"name": "b", "shape": [256, 256], "dtype": "bfloat16"},
        ],
        "rel_l2": 5e-3, "rtol": 1e-2, "atol": 1e-2,
    },
]
