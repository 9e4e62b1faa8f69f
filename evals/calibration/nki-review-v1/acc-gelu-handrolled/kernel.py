"""GELU, tanh approximation, y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), bf16 data.

Rows go on the partitions (the last tile is masked: the row count is arbitrary), whole rows of
1024 bf16 per tile (2 KiB per partition per transfer). The formula is written out instruction by
instruction in fp32: the cube, the polynomial, tanh on ScalarE with the sqrt(2/pi) scale fused,
then 0.5 (1 + t) and the product with x, cast to bf16 at the end.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

SQRT_2_OVER_PI = 0.7978845608028654


@nki.jit
def gelu_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    P = nl.tile_size.pmax

    i_p = nl.arange(P)[:, None]
    i_f = nl.arange(cols)[None, :]
    for t in nl.affine_range((rows + P - 1) // P):
        r = t * P + i_p
        inside = r < rows
        xt = nl.load(x[r, i_f], mask=inside)
        sq = nisa.tensor_tensor(xt, xt, np.multiply, dtype=nl.float32, mask=inside)
        cube = nisa.tensor_tensor(sq, xt, np.multiply, dtype=nl.float32, mask=inside)
        inner = nisa.scalar_tensor_tensor(data=cube, op0=np.multiply, operand0=0.044715, op1=np.add, operand1=xt,
                                          dtype=nl.float32, mask=inside)
        th = nisa.activation(op=nl.tanh, data=inner, scale=SQRT_2_OVER_PI, dtype=nl.float32, mask=inside)
        half = nisa.tensor_scalar(th, np.add, 1.0, op1=np.multiply, operand1=0.5, dtype=nl.float32, mask=inside)
        y = nisa.tensor_tensor(xt, half, np.multiply, dtype=x.dtype, mask=inside)
        nl.store(out[r, i_f], value=y, mask=inside)
    return out
