"""Swap the two free axes of [R, A, B] tiles on chip, nki 0.3+ style: 3-D SBUF tiles, the
transposed read expressed as an ``.ap()`` pattern ([[A*B, 128], [1, B], [B, A]]) fed to
``nisa.tensor_copy``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "transpose_free_kernel"
REFERENCE = "transpose_free_ref"


@nki.jit
def transpose_free_kernel(x):
    R, A, B = x.shape
    out = nl.ndarray((R, B, A), dtype=x.dtype, buffer=nl.shared_hbm)
    for r in range(R // 128):
        x_tile = nl.ndarray((128, A, B), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_tile, src=x[r * 128:(r + 1) * 128, :, :])
        y_tile = nl.ndarray((128, B, A), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=y_tile, src=x_tile.ap(pattern=[[A * B, 128], [1, B], [B, A]]))
        nisa.dma_copy(dst=out[r * 128:(r + 1) * 128, :, :], src=y_tile)
    return out


def transpose_free_ref(x):
    return np.ascontiguousarray(np.transpose(x, (0, 2, 1)))


CASES = [
    {"name": "fp32_256x8x24", "inputs": [{"name": "x", "shape": [256, 8, 24], "dtype": "float32"}],
     "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0},
    {"name": "bf16_128x16x4", "inputs": [{"name": "x", "shape": [128, 16, 4], "dtype": "bfloat16"}],
     "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0},
]
