"""2 x 2 max pooling with stride 2 of a [C, H, W] bf16 feature map.

Channels on the partitions (C a multiple of 128, asserted); one [128, H, W] image tile per
transfer. The four corners of every window are strided views of the tile, combined by three
VectorE max instructions in bf16 (max is exact in any dtype).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def maxpool2x2(x):
    C, H, W = x.shape
    P = nl.tile_size.pmax
    assert C % P == 0 and H % 2 == 0 and W % 2 == 0
    OH, OW = H // 2, W // 2
    y = nl.ndarray((C, OH, OW), dtype=x.dtype, buffer=nl.shared_hbm)
    ic, ih, iw = nl.mgrid[0:P, 0:OH, 0:OW]

    for c in nl.affine_range(C // P):
        img = nl.load(x[c * P:(c + 1) * P, :, :])
        top = nisa.tensor_tensor(img[ic, 2 * ih, 2 * iw], img[ic, 2 * ih, 2 * iw + 1], np.maximum)
        bottom = nisa.tensor_tensor(img[ic, 2 * ih + 1, 2 * iw], img[ic, 2 * ih + 1, 2 * iw + 1], np.maximum)
        nl.store(y[c * P:(c + 1) * P, :, :], value=nisa.tensor_tensor(top, bottom, np.maximum))
    return y
