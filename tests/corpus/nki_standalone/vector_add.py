"""Element-wise add of two [rows, cols] tensors, nki 0.3+ style: the ragged last row tile is
bounded with ``min`` instead of a mask, DMA in and out with ``nisa.dma_copy``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "vector_add_kernel"
REFERENCE = "vector_add_ref"


@nki.jit
def vector_add_kernel(a, b):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for t in range((rows + 127) // 128):
        lo = t * 128
        n = min(rows, lo + 128) - lo
        x = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray((128, cols), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x[0:n, :], src=a[lo:lo + n, :])
        nisa.dma_copy(dst=y[0:n, :], src=b[lo:lo + n, :])
        nisa.tensor_tensor(dst=x[0:n, :], data1=x[0:n, :], data2=y[0:n, :], op=nl.add)
        nisa.dma_copy(dst=out[lo:lo + n, :], src=x[0:n, :])
    return out


def vector_add_ref(a, b):
    return (a.astype(np.float64) + b.astype(np.float64)).astype(a.dtype)


CASES = [
    {"name": "fp32_300x512", "inputs": [{"name": "a", "shape": [300, 512], "dtype": "float32"},
                                        {"name": "b", "shape": [300, 512], "dtype": "float32"}]},
    {"name": "bf16_256x1024", "inputs": [{"name": "a", "shape": [256, 1024], "dtype": "bfloat16"},
                                         {"name": "b", "shape": [256, 1024], "dtype": "bfloat16"}],
     "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-2},
]
