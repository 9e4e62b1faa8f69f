"""GELU (tanh approximation) of a bf16 matrix, one ScalarE activation per tile.

Rows on the partitions, 128 per tile with the last tile masked (the row count is arbitrary);
a tile holds whole rows of 1024 bf16 (2 KiB per partition per transfer).
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def gelu_kernel(x):
    n_rows, n_cols = x.shape
    y = nl.ndarray((n_rows, n_cols), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    ip = nl.arange(P)[:, None]
    jf = nl.arange(n_cols)[None, :]
    for i in nl.affine_range((n_rows + P - 1) // P):
        rr = i * P + ip
        m = rr < n_rows
        xt = nl.load(x[rr, jf], mask=m)
        yt = nisa.activation(op=nl.gelu_apprx_tanh, data=xt, dtype=x.dtype, mask=m)
        nl.store(y[rr, jf], value=yt, mask=m)
    return y
