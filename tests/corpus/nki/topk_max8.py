"""Per-row top-8 values (descending) with ``nisa.max8``; DMA through ``nisa.dma_copy``.

Loads and stores are explicit ``nisa.dma_copy(dst=..., src=...)`` calls, which is the
beta-dialect keyword form (not the dst-first nki 0.3 API).  Decorated ``@nki.baremetal``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "top8_kernel"
REFERENCE = "top8_ref"


@nki.baremetal
def top8_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
        tile = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * 128:(t + 1) * 128, :])
        top = nisa.max8(src=tile)
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=top)
    return out


def top8_ref(x):
    return np.sort(x, axis=1)[:, ::-1][:, :8].copy()


CASES = [
    {
        "name": "fp32_256x700",
        "inputs": [{"name": "x", "shape": [256, 700], "dtype": "float32"}],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
]
