"""Element-wise sum out = x + y of two fp32 matrices.

Rows go on the 128 partitions and each tile holds whole rows (1024 fp32 = 4 KiB per partition
per transfer). The row count need not be a multiple of 128: the last tile is masked.
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
    for t in nl.affine_range((rows + P - 1) // P):
        r = t * P + i_p
        inside = r < rows
        a = nl.load(x[r, i_f], mask=inside)
        b = nl.load(y[r, i_f], mask=inside)
        total = nl.add(a, b, mask=inside)
        nl.store(out[r, i_f], value=total, mask=inside)
    return out
