"""2-D average pooling of a [C, H, W] tensor with non-overlapping pool x pool windows.

A 5-D ``nl.mgrid`` is unpacked into channel, output-row, output-column and two window
offsets; the affine index ``o * pool + k`` reads every window straight out of the SBUF
tile, and ``nl.sum`` over the two trailing window axes gives the window sums.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "avgpool_kernel"
REFERENCE = "avgpool_ref"


@nki.jit
def avgpool_kernel(x, pool):
    C, H, W = x.shape
    OH, OW = H // pool, W // pool
    out = nl.ndarray((C, OH, OW), dtype=x.dtype, buffer=nl.shared_hbm)

    i_c, i_oh, i_ow, i_kh, i_kw = nl.mgrid[0:C, 0:OH, 0:OW, 0:pool, 0:pool]
    img = nl.load(x)
    window_sum = nl.sum(img[i_c, i_oh * pool + i_kh, i_ow * pool + i_kw], axis=[3, 4])
    nl.store(out, value=window_sum * (1.0 / (pool * pool)))
    return out


def avgpool_ref(x, pool):
    C, H, W = x.shape
    OH, OW = H // pool, W // pool
    win = x[:, :OH * pool, :OW * pool].astype(np.float64).reshape(C, OH, pool, OW, pool)
    return win.mean(axis=(2, 4)).astype(x.dtype)


CASES = [
    {
        "name": "fp32_c64_16x24_pool2",
        "inputs": [{"name": "x", "shape": [64, 16, 24], "dtype": "float32"}],
        "args": [2],
    },
    {
        "name": "fp32_c128_12x18_pool3",
        "inputs": [{"name": "x", "shape": [128, 12, 18], "dtype": "float32"}],
        "args": [3],
    },
]
