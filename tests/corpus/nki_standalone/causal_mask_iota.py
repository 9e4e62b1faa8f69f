"""Causal mask of a [rows, cols] score matrix two ways, nki 0.3+ style: an ``nisa.iota`` access
pattern (column - row - diagonal, channel_multiplier=-1) compared with 0 into a predicate for
``tensor_copy_predicated`` over a -30000 fill, and ``nisa.affine_select`` on the same pattern."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "causal_mask_kernel"
REFERENCE = "causal_mask_ref"
FILL = -30000.0


@nki.jit
def causal_mask_kernel(scores, diagonal):
    rows, cols = scores.shape
    via_copy = nl.ndarray((rows, cols), dtype=scores.dtype, buffer=nl.shared_hbm)
    via_select = nl.ndarray((rows, cols), dtype=scores.dtype, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        st = nl.ndarray((128, cols), dtype=scores.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=st, src=scores[t * 128:(t + 1) * 128, :])
        offset = nl.ndarray((128, cols), dtype=nl.int32, buffer=nl.sbuf)
        nisa.iota(dst=offset, pattern=[[1, cols]], offset=-t * 128 - diagonal, channel_multiplier=-1)
        keep = nl.ndarray((128, cols), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=keep, data=offset, op0=nl.less_equal, operand0=0)
        masked = nl.ndarray((128, cols), dtype=scores.dtype, buffer=nl.sbuf)
        nisa.memset(dst=masked, value=-30000.0)
        nisa.tensor_copy_predicated(dst=masked, src=st, predicate=keep)
        nisa.dma_copy(dst=via_copy[t * 128:(t + 1) * 128, :], src=masked)

        sel = nl.ndarray((128, cols), dtype=scores.dtype, buffer=nl.sbuf)
        nisa.affine_select(dst=sel, pattern=[[1, cols]], channel_multiplier=-1, on_true_tile=st,
                           on_false_value=-30000.0, cmp_op=nl.less_equal, offset=-t * 128 - diagonal)
        nisa.dma_copy(dst=via_select[t * 128:(t + 1) * 128, :], src=sel)
    return via_copy, via_select


def causal_mask_ref(scores, diagonal):
    rows, cols = scores.shape
    keep = np.arange(cols)[None, :] <= np.arange(rows)[:, None] + diagonal
    masked = np.where(keep, scores, np.float32(FILL)).astype(scores.dtype)
    return masked, masked.copy()


CASES = [
    {"name": "fp32_256x384_diag0", "inputs": [{"name": "scores", "shape": [256, 384], "dtype": "float32"}],
     "args": [0], "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0},
    {"name": "fp32_128x256_diag64", "inputs": [{"name": "scores", "shape": [128, 256], "dtype": "float32"}],
     "args": [64], "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0},
]
