"""SiLU y = x * sigmoid(x) of a bf16 matrix on ScalarE.

Rows go on the partitions (the last tile is masked: the row count is arbitrary); a tile holds
whole rows of 2048 bf16 (4 KiB per partition per transfer) and the activation is one ScalarE
instruction per tile.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def silu_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + P - 1) // P):
        r = t * P + i_p
        inside = r < rows
        tile = nl.load(x[r, i_f], mask=inside)
        y = nisa.activation(op=nl.silu, data=tile, dtype=x.dtype, mask=inside)
        nl.store(out[r, i_f], value=y, mask=inside)
    return out
