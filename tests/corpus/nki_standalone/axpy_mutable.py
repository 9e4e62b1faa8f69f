"""y = alpha * x + y, written into the argument y and returned, nki 0.3+ style (a kernel that
writes and returns its own argument; ``nisa.scalar_tensor_tensor`` fuses the scale and the add)."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "axpy_kernel"
REFERENCE = "axpy_ref"


@nki.jit
def axpy_kernel(x, y, alpha):
    rows, cols = x.shape
    for t in range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        yt = nl.load(y[t * 128:(t + 1) * 128, :])
        res = nl.ndarray((128, cols), dtype=y.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=res, data=xt, op0=nl.multiply, operand0=alpha, op1=nl.add, operand1=yt)
        nl.store(y[t * 128:(t + 1) * 128, :], value=res)
    return y


def axpy_ref(x, y, alpha):
    return (alpha * x.astype(np.float64) + y.astype(np.float64)).astype(y.dtype)


CASES = [
    {"name": "fp32_256x640_alpha-1.5", "inputs": [{"name": "x", "shape": [256, 640], "dtype": "float32"},
                                                  {"name": "y", "shape": [256, 640], "dtype": "float32"}],
     "args": [-1.5]},
]
