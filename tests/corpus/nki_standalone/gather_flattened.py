"""Per-partition gather along the free axis with ``nisa.nc_n_gather(dst, data, indices)``,
nki 0.3+ style: out[p, k] = data[p, indices[p, k]]."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "gather_flattened_kernel"
REFERENCE = "gather_flattened_ref"


@nki.jit
def gather_flattened_kernel(data, indices):
    P, F = data.shape
    _, K = indices.shape
    out = nl.ndarray((P, K), dtype=data.dtype, buffer=nl.shared_hbm)
    d = nl.load(data)
    idx = nl.load(indices)
    got = nl.ndarray((P, K), dtype=data.dtype, buffer=nl.sbuf)
    nisa.nc_n_gather(dst=got, data=d, indices=idx)
    nl.store(out, value=got)
    return out


def gather_flattened_ref(data, indices):
    return np.take_along_axis(data, indices.astype(np.int64), axis=1)


CASES = [
    {"name": "fp32_128x64_k32", "inputs": [
        {"name": "data", "shape": [128, 64], "dtype": "float32"},
        {"name": "indices", "shape": [128, 32], "dtype": "uint32", "dist": "randint", "low": 0, "high": 64}],
     "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0},
]
