"""y = x @ w for an fp32 matrix and vector, ported from kernel.cu.

Each CUDA block of 128 threads becomes a 128-row tile: thread threadIdx.x is partition
threadIdx.x. Every thread's loop over the columns is kept: for each column c, one fused
multiply-add on VectorE updates the [128, 1] running sums with x[:, c] * w[c]. w is loaded once and
broadcast to the partitions. Rows are a multiple of 128 (asserted).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def matvec_kernel(x, w):
    rows, cols = x.shape
    P = nl.tile_size.pmax
    assert rows % P == 0, "rows must be a multiple of 128"
    y = nl.ndarray((rows,), dtype=nl.float32, buffer=nl.shared_hbm)
    y_col = y.reshape((rows, 1))
    w_tile = nl.broadcast_to(nl.load(w.reshape((1, cols))), shape=(P, cols))
    for b in nl.affine_range(rows // P):  # blockIdx.x
        xt = nl.load(x[b * P:(b + 1) * P, :])
        acc = nl.zeros((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.sequential_range(cols):  # each thread's column loop
            acc[...] = nisa.scalar_tensor_tensor(data=xt[:, c:c + 1], op0=np.multiply, operand0=w_tile[:, c:c + 1],
                                                 op1=np.add, operand1=acc, dtype=nl.float32)
        nl.store(y_col[b * P:(b + 1) * P, :], value=acc)
    return y
