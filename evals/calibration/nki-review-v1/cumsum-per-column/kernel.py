"""Cumulative sum along the last axis of an fp32 matrix with VectorE's tensor_tensor_scan.

Rows go on the partitions; columns stream through in 1024-wide chunks (4 KiB per partition per
transfer). Within a chunk the running total advances one column at a time: out[:, j] =
out[:, j-1] + x[:, j], carried from chunk to chunk, so both column loops are sequential_range;
the row-tile loop stays affine. Rows are a multiple of 128 and cols of 1024.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

CHUNK = 1024


@nki.jit
def cumsum_kernel(x):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0 and cols % CHUNK == 0, "rows must be a multiple of 128, cols of 1024"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)

    for t in nl.affine_range(rows // P):
        carry = nl.zeros((P, 1), dtype=nl.float32)
        for c in nl.sequential_range(cols // CHUNK):
            chunk = nl.load(x[t * P:(t + 1) * P, c * CHUNK:(c + 1) * CHUNK])
            running = nl.ndarray((P, CHUNK), dtype=nl.float32, buffer=nl.sbuf)
            for j in nl.sequential_range(CHUNK):
                carry[...] = nisa.tensor_tensor(carry, chunk[:, j:j + 1], np.add, dtype=nl.float32)
                running[:, j:j + 1] = nisa.tensor_copy(carry)
            nl.store(out[t * P:(t + 1) * P, c * CHUNK:(c + 1) * CHUNK], value=running)
    return out
