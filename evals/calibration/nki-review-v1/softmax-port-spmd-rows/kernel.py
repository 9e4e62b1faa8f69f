"""Row softmax of an fp16 matrix with fp32 statistics, ported from kernel.cu.

The CUDA launch maps directly: one SPMD program instance per CUDA block, i.e. per row
(nl.program_id(0) is blockIdx.x; the manifest's grid is [rows]). Each instance loads its row as a
[1, cols] tile, reduces the max and the sum along it (the block's shared-memory reductions) and
stores the normalised row. Statistics are fp32 as in the CUDA kernel; the output is fp16.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def softmax_rows(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    row = nl.program_id(0)  # blockIdx.x

    xr = nl.load(x[row:row + 1, :])
    neg_max = nisa.tensor_reduce(np.max, xr, axis=(1,), negate=True, keepdims=True, dtype=nl.float32)
    total = nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf)
    e = nisa.activation_reduce(op=nl.exp, data=xr, bias=neg_max, reduce_op=np.add, reduce_res=total,
                               dtype=nl.float32)
    inv_total = nisa.reciprocal(total, dtype=nl.float32)
    y = nisa.tensor_scalar(e, np.multiply, inv_total, dtype=x.dtype)
    nl.store(out[row:row + 1, :], value=y)
    return out
