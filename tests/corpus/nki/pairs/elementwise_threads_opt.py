"""Element-wise y = a * b + c on full 128-partition tiles.

Same computation as ``elementwise_threads_naive.py``: rows map to partitions, 128 at a
time, so each instruction and each DMA uses every lane (2 KiB per partition per DMA).
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "fma_tiles_kernel"
REFERENCE = "fma_ref"
EXPECTED_FINDINGS = []


@nki.jit
def fma_tiles_kernel(a, b, c):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
        a_t = nl.load(a[t * 128:(t + 1) * 128, :])
        b_t = nl.load(b[t * 128:(t + 1) * 128, :])
        c_t = nl.load(c[t * 128:(t + 1) * 128, :])
        prod = nl.multiply(a_t, b_t)
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.add(prod, c_t))
    return out


def fma_ref(a, b, c):
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(a.dtype)


CASES = [
    {
        "name": "fp32_256x512",
        "inputs": [
            {"name": "a", "shape": [256, 512], "dtype": "float32"},
            {"name": "b", "shape": [256, 512], "dtype": "float32"},
            {"name": "c", "shape": [256, 512], "dtype": "float32"},
        ],
    },
]
