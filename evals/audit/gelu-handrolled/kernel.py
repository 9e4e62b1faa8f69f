"""GELU (tanh approximation) of a bf16 matrix from its formula.

Rows on the partitions, 128 per tile with the last tile masked (the row count is arbitrary);
a tile holds whole rows of 1024 bf16 (2 KiB per partition per transfer). The formula
0.5 x (1 + tanh(c (x + 0.044715 x^3))) is evaluated step by step in fp32.
"""

import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

C = math.sqrt(2.0 / math.pi)


@nki.jit
def gelu_kernel(x):
    n_rows, n_cols = x.shape
    y = nl.ndarray((n_rows, n_cols), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    ip = nl.arange(P)[:, None]
    jf = nl.arange(n_cols)[None, :]
    for i in nl.affine_range((n_rows + P - 1) // P):
        rr = i * P + ip
        m = rr < n_rows
        xt = nl.load(x[rr, jf], mask=m)
        cube = nisa.tensor_tensor(xt, xt, np.multiply, dtype=nl.float32, mask=m)
        cube = nisa.tensor_tensor(cube, xt, np.multiply, dtype=nl.float32, mask=m)
        inner = nisa.scalar_tensor_tensor(data=cube, op0=np.multiply, operand0=0.044715, op1=np.add,
                                          operand1=xt, dtype=nl.float32, mask=m)
        t = nisa.activation(op=nl.tanh, data=inner, scale=C, dtype=nl.float32, mask=m)
        half = nisa.tensor_scalar(t, np.add, 1.0, op1=np.multiply, operand1=0.5, dtype=nl.float32, mask=m)
        yt = nisa.tensor_tensor(half, xt, np.multiply, dtype=x.dtype, mask=m)
        nl.store(y[rr, jf], value=yt, mask=m)
    return y
