"""Scatter-add of value rows into an accumulator table at (repeating) row ids, nki 0.3+ style:
``nisa.dma_compute(dst, [dst, values])`` through vector-offset ``.ap()`` patterns (each partition
names its row), the read-modify-write that replaced ``nl.atomic_rmw``; ids repeat, and every update
lands. The table is updated in place and returned."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "scatter_add_kernel"
REFERENCE = "scatter_add_ref"


@nki.jit
def scatter_add_kernel(acc, values, ids):
    N, D = values.shape
    ids_col = ids.reshape((N, 1))
    for t in range(N // 128):
        idx = nl.load(ids_col[t * 128:(t + 1) * 128, :])
        v = nl.load(values[t * 128:(t + 1) * 128, :])
        rows = acc.ap(pattern=[[D, 128], [1, D]], vector_offset=idx, indirect_dim=0)
        nisa.dma_compute(dst=rows, srcs=[rows, v], reduce_op=nl.add, unique_indices=False)
    return acc


def scatter_add_ref(acc, values, ids):
    out = acc.astype(np.float64)
    np.add.at(out, ids.astype(np.int64), values.astype(np.float64))
    return out.astype(acc.dtype)


CASES = [
    {"name": "fp32_table50x128_n256", "data_dependent_addresses": True, "inputs": [
        {"name": "acc", "shape": [50, 128], "dtype": "float32"},
        {"name": "values", "shape": [256, 128], "dtype": "float32"},
        {"name": "ids", "shape": [256], "dtype": "int32", "dist": "randint", "low": 0, "high": 50}],
     "rtol": 1e-5, "atol": 1e-4},
]
