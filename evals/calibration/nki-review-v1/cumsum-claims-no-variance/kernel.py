"""Cumulative sum along the last axis of an fp32 matrix with VectorE's tensor_tensor_scan.

Rows go on the partitions; columns stream through in 1024-wide chunks (4 KiB per partition per
transfer). Each chunk is one scan instruction r[i] = 1 * r[i-1] + x[i] seeded with the running
total of the previous chunk, a real loop-carried dependency, so the chunk loop is a
sequential_range; the row-tile loop stays affine. Rows are a multiple of 128 and cols of 1024.
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
    ones = nl.ones((P, CHUNK), dtype=nl.float32)

    for t in nl.affine_range(rows // P):
        carry = nl.zeros((P, 1), dtype=nl.float32)
        for c in nl.sequential_range(cols // CHUNK):
            chunk = nl.load(x[t * P:(t + 1) * P, c * CHUNK:(c + 1) * CHUNK])
            running = nisa.tensor_tensor_scan(ones, chunk, initial=carry, op0=np.multiply, op1=np.add,
                                              dtype=nl.float32)
            carry[...] = nisa.tensor_copy(running[:, CHUNK - 1:CHUNK])
            nl.store(out[t * P:(t + 1) * P, c * CHUNK:(c + 1) * CHUNK], value=running)
    return out
