"""2-D average pooling with non-overlapping pool x pool windows of a [C, H, W] fp32 tensor.

Channels go on the partitions (C is a multiple of 128); a whole [H, W] image of each channel is
one transfer (8 KiB per partition). The window sums are one VectorE reduction over a 5-D affine
view of the tile (channel, output row, output column, window row, window column); the 1/pool^2
scale is one instruction.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def avgpool_kernel(x, pool):
    C, H, W = x.shape
    P = nl.tile_size.pmax
    assert C % P == 0 and H % pool == 0 and W % pool == 0, "C must be a multiple of 128, H and W of pool"
    OH, OW = H // pool, W // pool
    out = nl.ndarray((C, OH, OW), dtype=x.dtype, buffer=nl.shared_hbm)

    i_c, i_oh, i_ow, i_kh, i_kw = nl.mgrid[0:P, 0:OH, 0:OW, 0:pool, 0:pool]
    for t in nl.affine_range(C // P):
        img = nl.load(x[t * P:(t + 1) * P, :, :])
        window_sums = nl.sum(img[i_c, i_oh * pool + i_kh, i_ow * pool + i_kw], axis=[3, 4], dtype=nl.float32)
        avg = nl.multiply(window_sums, 1.0 / (pool * pool), dtype=x.dtype)
        nl.store(out[t * P:(t + 1) * P, :, :], value=avg)
    return out
