"""SiLU with one ScalarE ``nisa.activation(dst, op=nl.silu, data)`` per 128-row tile, nki 0.3+ style;
the nki imports sit inside the kernel body, as some library kernels write them."""
import numpy as np

import nki

KERNEL = "silu_kernel"
REFERENCE = "silu_ref"


@nki.jit
def silu_kernel(x):
    import nki.isa as nisa
    import nki.language as nl

    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        buf = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=buf, src=x[t * 128:(t + 1) * 128, :])
        act = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=act, op=nl.silu, data=buf)
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=act)
    return out


def silu_ref(x):
    x64 = x.astype(np.float64)
    return (x64 / (1.0 + np.exp(-x64))).astype(x.dtype)


CASES = [
    {"name": "fp32_256x512", "inputs": [{"name": "x", "shape": [256, 512], "dtype": "float32", "std": 3.0}]},
    {"name": "bf16_128x768", "inputs": [{"name": "x", "shape": [128, 768], "dtype": "bfloat16", "std": 3.0}],
     "rel_l2": 5e-3, "rtol": 1e-2, "atol": 1e-2},
]
