"""Row softmax of a bf16 matrix with fp32 statistics.

128 rows per tile on the partitions; the last tile is masked because the row count is arbitrary.
The row max is taken negated (tensor_reduce negate=True) so it can be the bias of the exponential:
one ScalarE activation computes exp(x - max) and, through its accumulator, the row sum.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def softmax_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + P - 1) // P):
        r = t * P + i_p
        inside = r < rows
        tile = nl.load(x[r, i_f], mask=inside)
        neg_max = nisa.tensor_reduce(np.max, tile, axis=(1,), negate=True, keepdims=True,
                                     dtype=nl.float32, mask=inside)
        row_sum = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        probs = nisa.activation_reduce(op=nl.exp, data=tile, bias=neg_max, reduce_op=np.add,
                                       reduce_res=row_sum, dtype=nl.float32, mask=inside)
        inv_sum = nisa.reciprocal(row_sum, dtype=nl.float32, mask=inside)
        y = nisa.tensor_scalar(probs, np.multiply, inv_sum, dtype=x.dtype, mask=inside)
        nl.store(out[r, i_f], value=y, mask=inside)
    return out
