"""Row-wise running maximum and minimum over column tiles, nki 0.3+ style (``nl.loop_reduce`` is a
beta API): fp32 accumulators initialised from the first tile, then combined per tile with
``nisa.tensor_tensor(dst=acc, data1=acc, data2=tile, op=nl.maximum)`` in a Python ``range``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "running_extrema_kernel"
REFERENCE = "running_extrema_ref"


@nki.jit
def running_extrema_kernel(x):
    rows, cols = x.shape
    TF = 256
    hi_out = nl.ndarray((rows, TF), dtype=x.dtype, buffer=nl.shared_hbm)
    lo_out = nl.ndarray((rows, TF), dtype=x.dtype, buffer=nl.shared_hbm)
    hi = nl.ndarray((rows, TF), dtype=nl.float32, buffer=nl.sbuf)
    lo = nl.ndarray((rows, TF), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=hi, src=x[:, 0:TF])
    nisa.tensor_copy(dst=lo, src=hi)
    for j in range(1, cols // TF):
        tile = nl.load(x[:, j * TF:(j + 1) * TF])
        nisa.tensor_tensor(dst=hi, data1=hi, data2=tile, op=nl.maximum)
        nisa.tensor_tensor(dst=lo, data1=lo, data2=tile, op=nl.minimum)
    nl.store(hi_out, value=hi)
    nl.store(lo_out, value=lo)
    return hi_out, lo_out


def running_extrema_ref(x):
    tiles = x.astype(np.float32).reshape(x.shape[0], -1, 256)
    return tiles.max(axis=1), tiles.min(axis=1)


CASES = [
    {"name": "fp32_128x1024", "inputs": [{"name": "x", "shape": [128, 1024], "dtype": "float32"}]},
    {"name": "fp32_64x512", "inputs": [{"name": "x", "shape": [64, 512], "dtype": "float32", "dist": "uniform"}]},
]
