"""a * b + c one row at a time, nki 0.3+ style: a CUDA-thread-per-row habit that uses one of 128
partitions per instruction and one small DMA per row. Partner: ``elementwise_threads_opt.py``."""
import numpy as np

import nki
import nki.language as nl

KERNEL = "fma_rows_kernel"
REFERENCE = "fma_ref"
EXPECTED_FINDINGS = ["nki.thread-emulation"]


@nki.jit
def fma_rows_kernel(a, b, c):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for r in range(rows):
        a_row = nl.load(a[r:r + 1, :])
        b_row = nl.load(b[r:r + 1, :])
        c_row = nl.load(c[r:r + 1, :])
        prod = nl.multiply(a_row, b_row)
        nl.store(out[r:r + 1, :], value=nl.add(prod, c_row))
    return out


def fma_ref(a, b, c):
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(a.dtype)


CASES = [
    {"name": "fp32_256x512", "inputs": [{"name": "a", "shape": [256, 512], "dtype": "float32"},
                                        {"name": "b", "shape": [256, 512], "dtype": "float32"},
                                        {"name": "c", "shape": [256, 512], "dtype": "float32"}]},
]
