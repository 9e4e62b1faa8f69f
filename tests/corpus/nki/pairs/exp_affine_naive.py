"""y = exp(scale * x + shift) as three separate instructions (multiply, add, exp).

Each step is a full pass over the tile on its own engine instruction and writes an
intermediate tile; ScalarE's ``activation`` applies the scale and bias for free.
Partner: ``exp_affine_opt.py``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "exp_affine_naive_kernel"
REFERENCE = "exp_affine_ref"
EXPECTED_FINDINGS = ["nki.unfused-activation"]


@nki.jit
def exp_affine_naive_kernel(x, scale, shift):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        scaled = nl.multiply(xt, scale)
        shifted = nl.add(scaled, shift)
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.exp(shifted))
    return out


def exp_affine_ref(x, scale, shift):
    return np.exp(scale * x.astype(np.float64) + shift).astype(x.dtype)


CASES = [
    {
        "name": "fp32_256x512",
        "inputs": [{"name": "x", "shape": [256, 512], "dtype": "float32"}],
        "args": [0.5, -0.25],
    },
]
