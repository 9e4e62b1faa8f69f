"""SiLU y = x * sigmoid(x) of a bf16 matrix on ScalarE.

Rows go on the partitions (the last tile is masked: the row count is arbitrary); a tile holds
whole rows of 2048 bf16 (4 KiB per partition per transfer). sigmoid(x) is built as
1 / (1 + exp(-x)) in fp32 and multiplied by x.
"""

import numpy as np

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
        e = nisa.activation(op=nl.exp, data=tile, scale=-1.0, dtype=nl.float32, mask=inside)
        denom = nisa.tensor_scalar(e, np.add, 1.0, dtype=nl.float32, mask=inside)
        sig = nisa.reciprocal(denom, dtype=nl.float32, mask=inside)
        y = nisa.tensor_tensor(tile, sig, np.multiply, dtype=x.dtype, mask=inside)
        nl.store(out[r, i_f], value=y, mask=inside)
    return out
