"""Element-wise sum out = x + y of two fp32 matrices.

Rows go on the 128 partitions and each tile holds whole rows of 1024 fp32, gathered from HBM in
64-column pieces. The row count need not be a multiple of 128: the last tile is masked.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def add_kernel(x, y):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(cols)[None, :]
    PIECE = 64
    i_c = nl.arange(PIECE)[None, :]
    for t in nl.affine_range((rows + P - 1) // P):
        r = t * P + i_p
        inside = r < rows
        a = nl.ndarray((P, cols), dtype=x.dtype, buffer=nl.sbuf)
        b = nl.ndarray((P, cols), dtype=y.dtype, buffer=nl.sbuf)
        for c in nl.affine_range(cols // PIECE):
            a[i_p, c * PIECE + i_c] = nl.load(x[r, c * PIECE + i_c], mask=inside)
            b[i_p, c * PIECE + i_c] = nl.load(y[r, c * PIECE + i_c], mask=inside)
        total = nl.add(a, b, mask=inside)
        nl.store(out[r, i_f], value=total, mask=inside)
    return out
