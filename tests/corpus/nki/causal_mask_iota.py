"""Causal (lower-triangular, shifted by ``diagonal``) masking of a score matrix, two ways.

1. ``nisa.iota`` materialises col - row - diagonal as an int32 tile, ``nl.less_equal``
   turns it into a predicate and ``nl.where`` selects between the scores and a fill tile.
2. ``nisa.affine_select`` evaluates the same affine predicate directly.
Both outputs must agree with the reference.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "causal_mask_kernel"
REFERENCE = "causal_mask_ref"
FILL = -30000.0


@nki.jit
def causal_mask_kernel(scores, diagonal):
    rows, cols = scores.shape
    via_where = nl.ndarray((rows, cols), dtype=scores.dtype, buffer=nl.shared_hbm)
    via_select = nl.ndarray((rows, cols), dtype=scores.dtype, buffer=nl.shared_hbm)

    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(cols)[None, :]
    fill = nl.full((128, cols), -30000.0, dtype=nl.float32)
    for t in nl.affine_range(rows // 128):
        st = nl.load(scores[t * 128 + i_p, i_f])
        offset = nisa.iota(i_f - i_p - t * 128 - diagonal, dtype=nl.int32)
        keep = nl.less_equal(offset, 0)
        nl.store(via_where[t * 128 + i_p, i_f], value=nl.where(keep, st, fill))

        sel = nisa.affine_select(pred=(i_f - i_p - t * 128 - diagonal <= 0), on_true_tile=st[i_p, i_f],
                                 on_false_value=-30000.0)
        nl.store(via_select[t * 128 + i_p, i_f], value=sel)
    return via_where, via_select


def causal_mask_ref(scores, diagonal):
    rows, cols = scores.shape
    keep = np.arange(cols)[None, :] <= np.arange(rows)[:, None] + diagonal
    masked = np.where(keep, scores, np.float32(FILL)).astype(scores.dtype)
    return masked, masked.copy()


CASES = [
    {
        "name": "fp32_256x384_diag0",
        "inputs": [{"name": "scores", "shape": [256, 384], "dtype": "float32"}],
        "args": [0],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
    {
        "name": "fp32_128x256_diag64",
        "inputs": [{"name": "scores", "shape": [128, 256], "dtype": "float32"}],
        "args": [64],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
]
