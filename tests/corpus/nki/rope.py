"""Rotary position embedding on interleaved pairs: (x[2i], x[2i+1]) rotated by theta_i.

out[:, 2i]   = x[:, 2i] * cos[:, i] - x[:, 2i+1] * sin[:, i]
out[:, 2i+1] = x[:, 2i] * sin[:, i] + x[:, 2i+1] * cos[:, i]
Even and odd lanes are fetched with stride-2 affine indices (``2 * i_h`` and
``2 * i_h + 1``) and written back into an SBUF tile with the same indices.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "rope_kernel"
REFERENCE = "rope_ref"


@nki.jit
def rope_kernel(x, cos, sin):
    S, D = x.shape
    half = D // 2
    out = nl.ndarray((S, D), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_h = nl.arange(half)[None, :]
    i_d = nl.arange(D)[None, :]
    for t in nl.affine_range(S // 128):
        x_even = nl.load(x[t * 128 + i_p, 2 * i_h])
        x_odd = nl.load(x[t * 128 + i_p, 2 * i_h + 1])
        c = nl.load(cos[t * 128 + i_p, i_h])
        s = nl.load(sin[t * 128 + i_p, i_h])
        rot = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf)
        rot[i_p, 2 * i_h] = x_even * c - x_odd * s
        rot[i_p, 2 * i_h + 1] = x_even * s + x_odd * c
        nl.store(out[t * 128 + i_p, i_d], value=rot)
    return out


def rope_ref(x, cos, sin):
    x64 = x.astype(np.float64)
    ev, od = x64[:, 0::2], x64[:, 1::2]
    c, s = cos.astype(np.float64), sin.astype(np.float64)
    out = np.empty_like(x64)
    out[:, 0::2] = ev * c - od * s
    out[:, 1::2] = ev * s + od * c
    return out.astype(x.dtype)


CASES = [
    {
        "name": "fp32_256x128",
        "inputs": [
            {"name": "x", "shape": [256, 128], "dtype": "float32"},
            {"name": "cos", "shape": [256, 64], "dtype": "float32", "dist": "uniform", "low": -1.0, "high": 1.0},
            {"name": "sin", "shape": [256, 64], "dtype": "float32", "dist": "uniform", "low": -1.0, "high": 1.0},
        ],
    },
]
