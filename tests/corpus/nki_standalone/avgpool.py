"""2-D average pooling over [C, H, W] (channels on partitions), nki 0.3+ style: each of the
pool x pool window taps is an ``.ap()`` access pattern over the resident image
([[H*W, C], [pool*W, OH], [pool, OW]] from offset kh*W + kw), summed with ``nisa.tensor_tensor``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "avgpool_kernel"
REFERENCE = "avgpool_ref"


@nki.jit
def avgpool_kernel(x, pool):
    C, H, W = x.shape
    OH, OW = H // pool, W // pool
    out = nl.ndarray((C, OH, OW), dtype=x.dtype, buffer=nl.shared_hbm)
    img = nl.ndarray((C, H, W), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=img, src=x)
    acc = nl.ndarray((C, OH, OW), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    for kh in range(pool):
        for kw in range(pool):
            tap = img.ap(pattern=[[H * W, C], [pool * W, OH], [pool, OW]], offset=kh * W + kw)
            nisa.tensor_tensor(dst=acc, data1=acc, data2=tap, op=nl.add)
    res = nl.ndarray((C, OH, OW), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=res, data=acc, op0=nl.multiply, operand0=1.0 / (pool * pool))
    nisa.dma_copy(dst=out, src=res)
    return out


def avgpool_ref(x, pool):
    C, H, W = x.shape
    OH, OW = H // pool, W // pool
    win = x[:, :OH * pool, :OW * pool].astype(np.float64).reshape(C, OH, pool, OW, pool)
    return win.mean(axis=(2, 4)).astype(x.dtype)


CASES = [
    {"name": "fp32_c64_16x24_pool2", "inputs": [{"name": "x", "shape": [64, 16, 24], "dtype": "float32"}],
     "args": [2]},
    {"name": "fp32_c128_12x18_pool3", "inputs": [{"name": "x", "shape": [128, 12, 18], "dtype": "float32"}],
     "args": [3]},
]
