"""Row L2 normalisation y[r, :] = x[r, :] / sqrt(sum(x[r, :]^2) + eps) of a bf16 matrix.

128 rows per tile (rows a multiple of 128, asserted), whole rows of 1024 bf16 per partition.
A helper computes 1/norm per row: ScalarE squares the tile and sums it into an fp32 accumulator,
and a second activation turns the sum into rsqrt(sum + eps).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

EPS = 1e-6


def inv_row_norm(tile, eps_col):
    """[P, 1] reciprocal L2 norms of the rows of a [P, F] tile."""
    sumsq = nl.ndarray((tile.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(op=nl.square, data=tile, reduce_op=np.add, reduce_res=sumsq, dtype=nl.float32)
    return nisa.activation(op=nl.rsqrt, data=sumsq, bias=eps_col, dtype=nl.float32)


@nki.jit
def l2norm_kernel(x):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    eps_col = nl.full((P, 1), EPS, dtype=nl.float32)

    for t in nl.affine_range(rows // P):
        tile = nl.load(x[t * P:(t + 1) * P, :])
        inv = inv_row_norm(tile, eps_col)
        out = nisa.tensor_scalar(tile, np.multiply, inv, dtype=x.dtype)
        nl.store(y[t * P:(t + 1) * P, :], value=out)
    return y
