"""Top-8 values of every row with ``nisa.max8`` (dst first), descending, nki 0.3+ style."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "top8_kernel"
REFERENCE = "top8_ref"


@nki.jit
def top8_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        tile = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * 128:(t + 1) * 128, :])
        top = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
        nisa.max8(dst=top, src=tile)
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=top)
    return out


def top8_ref(x):
    return np.sort(x, axis=1)[:, ::-1][:, :8].copy()


CASES = [
    {"name": "fp32_256x700", "inputs": [{"name": "x", "shape": [256, 700], "dtype": "float32"}],
     "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0},
]
