"""Row sums out[r] = sum(x[r, :]) of an fp32 matrix.

The rows are laid out so that partition p holds rows p*T .. p*T+T-1 (T = rows / 128): every load
is a contiguous 8 KiB per partition, each row tile is reduced by one VectorE tensor_reduce into a
column of an on-chip [128, T] result, and the whole result leaves in a single store whose layout
matches out[p*T + t]. Rows are a multiple of 128 (asserted).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def rowsum_kernel(x):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    T = rows // P
    out = nl.ndarray((rows,), dtype=nl.float32, buffer=nl.shared_hbm)

    x_by_partition = x.reshape((P, T * cols))
    sums = nl.ndarray((P, T), dtype=nl.float32, buffer=nl.sbuf)
    for t in nl.affine_range(T):
        rows_t = nl.load(x_by_partition[:, t * cols:(t + 1) * cols])
        sums[:, t:t + 1] = nisa.tensor_reduce(np.add, rows_t, axis=(1,), keepdims=True, dtype=nl.float32)
    nl.store(out.reshape((P, T)), value=sums)
    return out
