"""y[r, :] = x[r, :] / max(|x[r, :]|) for an fp32 matrix, ported from kernel.cu.

The port keeps the CUDA launch (4 blocks of 64 threads) and its grid-stride loop: each "thread"
owns one row r = step * 256 + block * 64 + tid, loads it as a [1, cols] tile, reduces |x| to its
maximum, and scales the row by the reciprocal. Rows are a multiple of the 256-thread grid (asserted).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

THREADS = 64  # blockDim.x
BLOCKS = 4  # gridDim.x


@nki.jit
def rowmax_scale_kernel(x):
    rows, cols = x.shape
    stride = THREADS * BLOCKS
    assert rows % stride == 0, "rows must be a multiple of the grid size"
    y = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for step in nl.affine_range(rows // stride):  # the grid-stride loop
        for block in nl.affine_range(BLOCKS):  # blockIdx.x
            for tid in nl.affine_range(THREADS):  # threadIdx.x
                r = step * stride + block * THREADS + tid
                row = nl.load(x[r:r + 1, :])
                m = nisa.tensor_reduce(np.max, nl.abs(row), axis=[1], keepdims=True)
                inv = nisa.reciprocal(m)
                nl.store(y[r:r + 1, :], value=nisa.tensor_scalar(row, np.multiply, inv))
    return y
