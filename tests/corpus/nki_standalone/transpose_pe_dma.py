"""Transpose a [R, C] matrix (C <= 128) two ways: TensorE ``nc_transpose`` into PSUM (evicted with
``tensor_copy``) for each 128-row block, and one DMA transpose (``dma_transpose``) of the whole
[C, R<=128] result block. Both outputs are returned."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "transpose_kernel"
REFERENCE = "transpose_ref"
EXPECTED_FINDINGS = ["nki.load-transpose-in-loop"]  # the DMA transpose per row block, as the beta original


@nki.jit
def transpose_kernel(x):
    rows, cols = x.shape
    pe = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    dma = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        tile = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=tile, src=x[t * 128:(t + 1) * 128, :])
        tp = nl.ndarray((cols, 128), dtype=x.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=tp, data=tile, engine=nisa.engine.tensor)
        ts = nl.ndarray((cols, 128), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=ts, src=tp)
        nisa.dma_copy(dst=pe[:, t * 128:(t + 1) * 128], src=ts)
        td = nl.ndarray((cols, 128), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=td, src=x[t * 128:(t + 1) * 128, :])
        nisa.dma_copy(dst=dma[:, t * 128:(t + 1) * 128], src=td)
    return pe, dma


def transpose_ref(x):
    return x.T.copy(), x.T.copy()


CASES = [
    {"name": "fp32_256x96", "rtol": 0, "atol": 0, "rel_l2": 0, "inputs": [{"name": "x", "shape": [256, 96],
                                                                         "dtype": "float32"}]},
    {"name": "bf16_128x128", "rtol": 0, "atol": 0, "rel_l2": 0, "inputs": [{"name": "x", "shape": [128, 128],
                                                                          "dtype": "bfloat16"}]},
]
