"""a * b + c over [128, cols] tiles, nki 0.3+ style: all partitions busy, one wide DMA per operand
tile, the multiply and the add as two ``nisa.tensor_tensor`` instructions over whole tiles. Partner: ``elementwise_threads_naive.py``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "fma_tiles_kernel"
REFERENCE = "fma_ref"
EXPECTED_FINDINGS = []


@nki.jit
def fma_tiles_kernel(a, b, c):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        a_t = nl.load(a[t * 128:(t + 1) * 128, :])
        b_t = nl.load(b[t * 128:(t + 1) * 128, :])
        c_t = nl.load(c[t * 128:(t + 1) * 128, :])
        res = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=res, data1=a_t, data2=b_t, op=nl.multiply)
        nisa.tensor_tensor(dst=res, data1=res, data2=c_t, op=nl.add)
        nl.store(out[t * 128:(t + 1) * 128, :], value=res)
    return out


def fma_ref(a, b, c):
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(a.dtype)


CASES = [
    {"name": "fp32_256x512", "inputs": [{"name": "a", "shape": [256, 512], "dtype": "float32"},
                                        {"name": "b", "shape": [256, 512], "dtype": "float32"},
                                        {"name": "c", "shape": [256, 512], "dtype": "float32"}]},
]
