"""Element-wise product out = x * y of two fp32 matrices, in tiles of 64 rows.

Each tile holds 64 whole rows of 1024 fp32 (4 KiB per partition per transfer); rows are a
multiple of 64 (asserted). One VectorE multiply per tile.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

ROWS = 64  # rows per tile


@nki.jit
def mul_kernel(x, y):
    rows, cols = x.shape
    assert rows % ROWS == 0, "rows must be a multiple of 64"
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // ROWS):
        a = nl.load(x[t * ROWS:(t + 1) * ROWS, :])
        b = nl.load(y[t * ROWS:(t + 1) * ROWS, :])
        nl.store(out[t * ROWS:(t + 1) * ROWS, :], value=nisa.tensor_tensor(a, b, np.multiply))
    return out
