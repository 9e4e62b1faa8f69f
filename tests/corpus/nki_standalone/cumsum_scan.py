"""Cumulative sum along the free axis with ``tensor_tensor_scan``, chained over column tiles:
each tile's scan starts from the previous tile's last column (``initial`` as a [P, 1] tile)."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "cumsum_kernel"
REFERENCE = "cumsum_ref"


@nki.jit
def cumsum_kernel(x):
    rows, cols = x.shape
    TF = 256
    out = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.shared_hbm)
    ones = nl.ndarray((rows, TF), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    carry = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=carry, value=0.0)
    for j in range(cols // TF):
        tile = nl.ndarray((rows, TF), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[:, j * TF:(j + 1) * TF])
        acc = nl.ndarray((rows, TF), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(dst=acc, data0=ones, data1=tile, initial=carry, op0=nl.multiply, op1=nl.add)
        nisa.tensor_copy(dst=carry, src=acc[:, TF - 1:TF])
        nisa.dma_copy(dst=out[:, j * TF:(j + 1) * TF], src=acc)
    return out


def cumsum_ref(x):
    return np.cumsum(x.astype(np.float64), axis=1).astype(np.float32)


CASES = [
    {"name": "fp32_128x1024", "rel_l2": 1e-5, "rtol": 1e-4, "atol": 1e-3,
     "inputs": [{"name": "x", "shape": [128, 1024], "dtype": "float32"}]},
    {"name": "fp32_64x512", "rel_l2": 1e-5, "rtol": 1e-4, "atol": 1e-3,
     "inputs": [{"name": "x", "shape": [64, 512], "dtype": "float32", "dist": "uniform"}]},
]
