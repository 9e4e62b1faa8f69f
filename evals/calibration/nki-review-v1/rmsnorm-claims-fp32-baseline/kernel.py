"""RMSNorm y = x / sqrt(mean(x^2) + eps) * gamma over the last axis, bf16 data, fp32 statistics.

128 rows per tile; the row count is arbitrary, so the last tile is masked. gamma is loaded once
and broadcast to the 128 partitions before the row loop. One ScalarE activation squares the tile
and sums the squares into an fp32 accumulator; a second one turns the sum into 1/rms with the
1/cols scale and the eps bias fused; one VectorE instruction applies 1/rms and gamma together.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

EPS = 1e-6


@nki.jit
def rmsnorm_kernel(x, gamma):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    g_row = nl.load(gamma.reshape((1, cols)))
    g_tile = nl.broadcast_to(g_row, shape=(P, cols))
    eps_tile = nl.full((P, 1), EPS, dtype=nl.float32)

    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + P - 1) // P):
        r = t * P + i_p
        inside = r < rows
        tile = nl.load(x[r, i_f], mask=inside)
        sum_sq = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(op=nl.square, data=tile, reduce_op=np.add, reduce_res=sum_sq,
                               dtype=nl.float32, mask=inside)
        inv_rms = nisa.activation(op=nl.rsqrt, data=sum_sq, scale=1.0 / cols, bias=eps_tile,
                                  dtype=nl.float32, mask=inside)
        y = nisa.scalar_tensor_tensor(data=tile, op0=np.multiply, operand0=inv_rms,
                                      op1=np.multiply, operand1=g_tile, dtype=x.dtype, mask=inside)
        nl.store(out[r, i_f], value=y, mask=inside)
    return out
