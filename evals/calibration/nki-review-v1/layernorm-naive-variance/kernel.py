"""LayerNorm y = (x - mean) / sqrt(var + eps) * gamma + beta over the last axis, bf16 data.

Statistics are fp32: the mean and the mean of squares come from two ScalarE passes that sum into
fp32 accumulators, and the variance is E[x^2] - E[x]^2.
The normalisation is one two-op tensor_scalar with the [P, 1] mean and 1/std; gamma and beta are
loaded once and broadcast to the partitions. Rows are a multiple of 128 (asserted).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

EPS = 1e-5


@nki.jit
def layernorm_kernel(x, gamma, beta):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    CHUNK = nl.tile_size.bn_stats_fmax
    assert rows % P == 0 and cols % CHUNK == 0, "rows must be a multiple of 128, cols of 512"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)

    g_tile = nl.broadcast_to(nl.load(gamma.reshape((1, cols))), shape=(P, cols))
    b_tile = nl.broadcast_to(nl.load(beta.reshape((1, cols))), shape=(P, cols))
    eps_tile = nl.full((P, 1), EPS, dtype=nl.float32)

    for t in nl.affine_range(rows // P):
        tile = nl.load(x[t * P:(t + 1) * P, :])
        sums = nl.ndarray((P, 2), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(op=nl.copy, data=tile, reduce_op=np.add, reduce_res=sums[:, 0:1], dtype=nl.float32)
        nisa.activation_reduce(op=nl.square, data=tile, reduce_op=np.add, reduce_res=sums[:, 1:2], dtype=nl.float32)
        moments = nisa.tensor_scalar(sums, np.multiply, 1.0 / cols, dtype=nl.float32)  # [E[x], E[x^2]]
        mean_sq = nisa.tensor_tensor(moments[:, 0:1], moments[:, 0:1], np.multiply, dtype=nl.float32)
        var = nisa.tensor_tensor(moments[:, 1:2], mean_sq, np.subtract, dtype=nl.float32)
        inv_std = nisa.activation(op=nl.rsqrt, data=var, bias=eps_tile, dtype=nl.float32)
        normed = nisa.tensor_scalar(tile, np.subtract, moments[:, 0:1], op1=np.multiply, operand1=inv_std,
                                    dtype=nl.float32)
        scaled = nisa.tensor_tensor(normed, g_tile, np.multiply, dtype=nl.float32)
        y = nisa.tensor_tensor(scaled, b_tile, np.add, dtype=x.dtype)
        nl.store(out[t * P:(t + 1) * P, :], value=y)
    return out
