"""Row softmax over a [rows, cols] tensor, 128 rows per tile."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def softmax_rows(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    for t in nl.affine_range(rows // P):
        tile = nl.load(x[t * P:(t + 1) * P, :])
        row_max = nl.max(tile, axis=[1], keepdims=True)
        shifted = nl.subtract(tile, row_max)
        num = nl.exp(shifted)
        den = nl.sum(num, axis=[1], keepdims=True)
        nl.store(out[t * P:(t + 1) * P, :], value=nl.divide(num, den))

    return out
