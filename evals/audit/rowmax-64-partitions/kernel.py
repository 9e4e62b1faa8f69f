"""Row maxima m[r] = max(x[r, :]) of an fp32 matrix, returned as [rows, 1].

64 rows per tile on the partitions (rows a multiple of 64, asserted); each tile is one
2048-element-per-partition load (8 KiB) and one VectorE max along the free axis.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def rowmax_kernel(x):
    R, C = x.shape
    TILE_R = 64  # rows per tile
    assert R % TILE_R == 0, "rows must be a multiple of 64"
    m = nl.ndarray((R, 1), dtype=nl.float32, buffer=nl.shared_hbm)

    for b in nl.affine_range(R // TILE_R):
        block = nl.load(x[b * TILE_R:(b + 1) * TILE_R, :])
        mx = nisa.tensor_reduce(np.max, block, axis=(1,), keepdims=True, dtype=nl.float32)
        nl.store(m[b * TILE_R:(b + 1) * TILE_R, :], value=mx)
    return m
