"""SiLU (x * sigmoid(x)) as one ScalarE ``nisa.activation`` per tile.

The ``nl``/``nisa`` imports and ``par_dim`` are imported inside the kernel body, as some
kernels do; the SBUF buffer is declared with an explicit ``par_dim`` and filled with
``buf[...] = nl.load(...)``.
"""
import numpy as np

import neuronxcc.nki as nki

KERNEL = "silu_kernel"
REFERENCE = "silu_ref"


@nki.jit
def silu_kernel(x):
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl
    from neuronxcc.nki.language import par_dim

    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
        buf = nl.ndarray((par_dim(128), cols), dtype=x.dtype, buffer=nl.sbuf)
        buf[...] = nl.load(x[t * 128:(t + 1) * 128, :])
        act = nisa.activation(op=nl.silu, data=buf, dtype=x.dtype)
        nl.store(out[t * 128:(t + 1) * 128, :], value=act)
    return out


def silu_ref(x):
    x64 = x.astype(np.float64)
    return (x64 / (1.0 + np.exp(-x64))).astype(x.dtype)


CASES = [
    {
        "name": "fp32_256x512",
        "inputs": [{"name": "x", "shape": [256, 512], "dtype": "float32", "std": 3.0}],
    },
    {
        "name": "bf16_128x768",
        "inputs": [{"name": "x", "shape": [128, 768], "dtype": "bfloat16", "std": 3.0}],
        "rel_l2": 5e-3, "rtol": 1e-2, "atol": 1e-2,
    },
]
