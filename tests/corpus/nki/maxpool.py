"""2-D max pooling with overlapping windows (kernel k, stride s) over a batch of images.

x is [B, C, H, W] with C <= 128 on the partition axis.  The window grid is a 5-D
``nl.mgrid`` (unpacked); the output grid is used through ``.p/.x/.y`` to write the
pooled tile into an SBUF staging tile before one store per image.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "maxpool_kernel"
REFERENCE = "maxpool_ref"


@nki.jit
def maxpool_kernel(x, kernel_size, stride):
    B, C, H, W = x.shape
    OH = (H - kernel_size) // stride + 1
    OW = (W - kernel_size) // stride + 1
    out = nl.ndarray((B, C, OH, OW), dtype=x.dtype, buffer=nl.shared_hbm)

    i_c, i_oh, i_ow, i_kh, i_kw = nl.mgrid[0:C, 0:OH, 0:OW, 0:kernel_size, 0:kernel_size]
    o = nl.mgrid[0:C, 0:OH, 0:OW]
    for b in nl.affine_range(B):
        img = nl.load(x[b])
        pooled = nl.ndarray((C, OH, OW), dtype=x.dtype, buffer=nl.sbuf)
        pooled[o.p, o.x, o.y] = nl.max(img[i_c, i_oh * stride + i_kh, i_ow * stride + i_kw], axis=[3, 4])
        nl.store(out[b], value=pooled)
    return out


def maxpool_ref(x, kernel_size, stride):
    B, C, H, W = x.shape
    OH = (H - kernel_size) // stride + 1
    OW = (W - kernel_size) // stride + 1
    res = np.full((B, C, OH, OW), -np.inf, dtype=np.float64)
    for kh in range(kernel_size):
        for kw in range(kernel_size):
            sl = x[:, :, kh:kh + stride * (OH - 1) + 1:stride, kw:kw + stride * (OW - 1) + 1:stride]
            res = np.maximum(res, sl.astype(np.float64))
    return res.astype(x.dtype)


CASES = [
    {
        "name": "fp32_b2_c32_15x15_k3s2",
        "inputs": [{"name": "x", "shape": [2, 32, 15, 15], "dtype": "float32"}],
        "args": [3, 2],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
    {
        "name": "bf16_b1_c128_8x10_k2s1",
        "inputs": [{"name": "x", "shape": [1, 128, 8, 10], "dtype": "bfloat16"}],
        "args": [2, 1],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
]
