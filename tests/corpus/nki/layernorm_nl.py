"""LayerNorm with high-level ``nl`` calls only: y = (x - mean) / sqrt(var + eps) * g + b.

Statistics come from ``nl.mean(..., keepdims=True)``; [P, 1] tiles broadcast along the
free axis through operators.  The weight and bias are broadcast to 128 partitions
once, outside the row loop; the ragged last row tile is masked on load and store.
"""
import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "layernorm_nl_kernel"
REFERENCE = "layernorm_nl_ref"


@nki.jit
def layernorm_nl_kernel(x, gamma, beta, eps):
    rows, D = x.shape
    out = nl.ndarray((rows, D), dtype=x.dtype, buffer=nl.shared_hbm)
    g_b = nl.broadcast_to(nl.load(gamma.reshape((1, D))), shape=(128, D))
    b_b = nl.broadcast_to(nl.load(beta.reshape((1, D))), shape=(128, D))

    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(D)[None, :]
    for t in nl.affine_range(math.ceil(rows / 128)):
        live = t * 128 + i_p < rows
        xt = nl.load(x[t * 128 + i_p, i_f], mask=live)
        mean = nl.mean(xt, axis=[1], keepdims=True, mask=live)
        xc = nl.subtract(xt, mean, mask=live)
        var = nl.mean(nl.square(xc, mask=live), axis=[1], keepdims=True, mask=live)
        rstd = nl.rsqrt(nl.add(var, eps, mask=live), mask=live)
        y = xc * rstd
        y = y * g_b + b_b
        nl.store(out[t * 128 + i_p, i_f], value=y, mask=live)
    return out


def layernorm_nl_ref(x, gamma, beta, eps):
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(axis=1, keepdims=True)
    y = (x64 - mu) / np.sqrt(var + eps) * gamma[None, :] + beta[None, :]
    return y.astype(x.dtype)


CASES = [
    {
        "name": "fp32_200x384",
        "inputs": [
            {"name": "x", "shape": [200, 384], "dtype": "float32", "mean": 1.5, "std": 2.0},
            {"name": "gamma", "shape": [384], "dtype": "float32", "dist": "uniform", "low": 0.5, "high": 1.5},
            {"name": "beta", "shape": [384], "dtype": "float32", "std": 0.1},
        ],
        "args": [1e-5],
    },
]
