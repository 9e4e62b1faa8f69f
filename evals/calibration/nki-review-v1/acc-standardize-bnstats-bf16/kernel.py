"""Row standardisation y = (x - mean) / sqrt(var + eps) over the last axis, bf16 data.

The statistics come from VectorE's bn_stats/bn_aggr. bn_stats takes at most 512 elements per
partition, so each 2048-wide row is four chunks whose 6-value statistics sit side by side in one
tile; bn_aggr folds them into [mean, var]. Neither instruction is given a dtype, so both produce
the dtype of their input: the tile of statistics is allocated like the data. One two-op
tensor_scalar subtracts the mean and multiplies by 1/std. Rows are a multiple of 128 (asserted).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

EPS = 1e-5


@nki.jit
def standardize_kernel(x):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    CHUNK = nl.tile_size.bn_stats_fmax
    assert rows % P == 0 and cols % CHUNK == 0, "rows must be a multiple of 128, cols of 512"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    n_chunks = cols // CHUNK
    eps_tile = nl.full((P, 1), EPS, dtype=nl.float32)

    for t in nl.affine_range(rows // P):
        tile = nl.load(x[t * P:(t + 1) * P, :])
        stats = nl.ndarray((P, 6 * n_chunks), dtype=x.dtype, buffer=nl.sbuf)
        for c in nl.affine_range(n_chunks):
            stats[:, 6 * c:6 * (c + 1)] = nisa.bn_stats(tile[:, CHUNK * c:CHUNK * (c + 1)])
        mean_var = nisa.bn_aggr(stats)
        inv_std = nisa.activation(op=nl.rsqrt, data=mean_var[:, 1:2], bias=eps_tile, dtype=nl.float32)
        y = nisa.tensor_scalar(tile, np.subtract, mean_var[:, 0:1], op1=np.multiply, operand1=inv_std,
                               dtype=x.dtype)
        nl.store(out[t * P:(t + 1) * P, :], value=y)
    return out
