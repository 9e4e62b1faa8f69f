"""exp(scale * x + shift), nki 0.3+ style, with the affine part as its own VectorE
``nisa.tensor_scalar`` before the ScalarE ``nisa.activation``: two passes over every tile where
one would do. Partner: ``exp_affine_opt.py``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "exp_affine_naive_kernel"
REFERENCE = "exp_affine_ref"
EXPECTED_FINDINGS = ["nki.unfused-activation"]


@nki.jit
def exp_affine_naive_kernel(x, scale, shift):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        shifted = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=shifted, data=xt, op0=nl.multiply, operand0=scale, op1=nl.add, operand1=shift)
        yt = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=yt, op=nl.exp, data=shifted)
        nl.store(out[t * 128:(t + 1) * 128, :], value=yt)
    return out


def exp_affine_ref(x, scale, shift):
    return np.exp(scale * x.astype(np.float64) + shift).astype(x.dtype)


CASES = [
    {"name": "fp32_256x512", "inputs": [{"name": "x", "shape": [256, 512], "dtype": "float32"}], "args": [0.5, -0.25]},
]
