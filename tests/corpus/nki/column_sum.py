"""Column sums of a [R, C] tensor (a reduction across partitions), computed twice.

1. On TensorE: a [128, 1] ones vector as the stationary operand contracts the partition
   axis; partial sums of successive row tiles accumulate in one [1, C] PSUM tile.
2. On GpSimd: ``nisa.tensor_partition_reduce`` per tile, accumulated in an SBUF tile
   declared before the loop; that running total is a loop-carried dependency, hence
   ``nl.sequential_range``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "column_sum_kernel"
REFERENCE = "column_sum_ref"


@nki.jit
def column_sum_kernel(x):
    R, C = x.shape
    via_pe = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.shared_hbm)
    via_pool = nl.ndarray((1, C), dtype=nl.float32, buffer=nl.shared_hbm)

    ones = nl.ones((128, 1), dtype=nl.float32)
    acc = nl.zeros((1, C), dtype=nl.float32, buffer=nl.psum)
    total = nl.zeros((1, C), dtype=nl.float32, buffer=nl.sbuf)
    for t in nl.sequential_range(R // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        acc += nisa.nc_matmul(ones, xt)
        part = nisa.tensor_partition_reduce(np.add, data=xt, dtype=nl.float32)
        total[...] = nl.add(total, part)
    nl.store(via_pe, value=nl.copy(acc))
    nl.store(via_pool, value=total)
    return via_pe, via_pool


def column_sum_ref(x):
    s = x.astype(np.float64).sum(axis=0, keepdims=True).astype(np.float32)
    return s, s.copy()


CASES = [
    {
        "name": "fp32_384x512",
        "inputs": [{"name": "x", "shape": [384, 512], "dtype": "float32", "mean": 0.5}],
    },
    {
        "name": "fp32_128x200",
        "inputs": [{"name": "x", "shape": [128, 200], "dtype": "float32", "dist": "uniform", "low": 0.0, "high": 1.0}],
    },
]
