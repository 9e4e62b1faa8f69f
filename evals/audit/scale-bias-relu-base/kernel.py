"""Per-channel affine + ReLU: y[c, :] = relu(x[c, :] * scale[c] + bias[c]) for bf16 activations.

Channels go on the partitions (C a multiple of 128, asserted); each tile is a [128, HW] slab of
2048 bf16 per partition (4 KiB). The per-channel scale and bias are loaded as [128, 1] fp32
columns and fused into one ScalarE activation per tile.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def scale_bias_relu(x, scale, bias):
    C, HW = x.shape
    P = nl.tile_size.pmax
    assert C % P == 0, "channels must be a multiple of 128"
    y = nl.ndarray((C, HW), dtype=x.dtype, buffer=nl.shared_hbm)
    scale_col, bias_col = scale.reshape((C, 1)), bias.reshape((C, 1))

    for c in nl.affine_range(C // P):
        s = nl.load(scale_col[c * P:(c + 1) * P, :])
        b = nl.load(bias_col[c * P:(c + 1) * P, :])
        xt = nl.load(x[c * P:(c + 1) * P, :])
        yt = nisa.activation(op=nl.relu, data=xt, scale=s, bias=b, dtype=x.dtype)
        nl.store(y[c * P:(c + 1) * P, :], value=yt)
    return y
