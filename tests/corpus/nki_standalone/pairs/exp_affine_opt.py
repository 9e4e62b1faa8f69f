"""exp(scale * x + shift) as one ScalarE ``nisa.activation(dst, op=nl.exp, data, bias, scale)``,
nki 0.3+ style; the shift is a [128, 1] bias column set once. Partner: ``exp_affine_naive.py``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "exp_affine_opt_kernel"
REFERENCE = "exp_affine_ref"
EXPECTED_FINDINGS = []


@nki.jit
def exp_affine_opt_kernel(x, scale, shift):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    shift_tile = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=shift_tile, value=shift)
    for t in range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        yt = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=yt, op=nl.exp, data=xt, bias=shift_tile, scale=scale)
        nl.store(out[t * 128:(t + 1) * 128, :], value=yt)
    return out


def exp_affine_ref(x, scale, shift):
    return np.exp(scale * x.astype(np.float64) + shift).astype(x.dtype)


CASES = [
    {"name": "fp32_256x512", "inputs": [{"name": "x", "shape": [256, 512], "dtype": "float32"}], "args": [0.5, -0.25]},
]
