"""Column sums of [R, C] two ways, nki 0.3+ style: a ones-vector ``nisa.nc_matmul`` into one PSUM
tile (the first matmul overwrites the fresh allocation, later ones add), and
``nisa.tensor_partition_reduce`` per row tile added into an fp32 SBUF total."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "column_sum_kernel"
REFERENCE = "column_sum_ref"


@nki.jit
def column_sum_kernel(x):
    R, C = x.shape
    via_pe = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.shared_hbm)
    via_pool = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.shared_hbm)
    ones = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=ones, value=1.0)
    acc = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.psum)
    total = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=total, value=0.0)
    for t in range(R // 128):
        xt = nl.ndarray((128, C), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * 128:(t + 1) * 128, :])
        nisa.nc_matmul(acc, ones, xt)
        part = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(dst=part, op=nl.add, data=xt)
        nisa.tensor_tensor(dst=total, data1=total, data2=part, op=nl.add)
    pe = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=pe, src=acc)
    nisa.dma_copy(dst=via_pe, src=pe)
    nisa.dma_copy(dst=via_pool, src=total)
    return via_pe, via_pool


def column_sum_ref(x):
    s = x.astype(np.float64).sum(axis=0, keepdims=True).astype(np.float32)
    return s, s.copy()


CASES = [
    {"name": "fp32_384x512", "inputs": [{"name": "x", "shape": [384, 512], "dtype": "float32", "mean": 0.5}]},
    {"name": "fp32_128x200", "inputs": [{"name": "x", "shape": [128, 200], "dtype": "float32", "dist": "uniform",
                                         "low": 0.0, "high": 1.0}]},
]
