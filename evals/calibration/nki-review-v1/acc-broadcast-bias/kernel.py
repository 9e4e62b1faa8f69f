"""Per-batch bias add y[b] = x[b] + bias[b] (broadcast over the rows), fp32.

Each batch's bias is one [1, D] row: it is loaded once per batch and broadcast to the 128
partitions, the standard way to apply a row vector to row tiles. The rows of a batch are walked in
128-row tiles of whole 512-float rows (2 KiB per partition per transfer); sequence lengths are a
multiple of 128 (asserted).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def batch_bias_kernel(x, bias):
    B, S, D = x.shape
    P = nl.tile_size.pmax
    assert S % P == 0, "the sequence length must be a multiple of 128"
    out = nl.ndarray((B, S, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        row = nl.load(bias[b:b + 1, :])
        bias_tile = nl.broadcast_to(row, shape=(P, D))
        for s in nl.affine_range(S // P):
            tile = nl.load(x[b, s * P:(s + 1) * P, :])
            y = nisa.tensor_tensor(tile, bias_tile, np.add, dtype=x.dtype)
            nl.store(out[b, s * P:(s + 1) * P, :], value=y)
    return out
