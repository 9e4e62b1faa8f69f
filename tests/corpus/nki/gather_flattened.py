"""Per-partition gather: out[p, j] = data[p, idx[p, j]] with ``nl.gather_flattened``.

Indices are uint32 offsets into each partition's (flattened) free axis, loaded from HBM
like the data; the gather never crosses partitions.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "gather_flattened_kernel"
REFERENCE = "gather_flattened_ref"


@nki.jit
def gather_flattened_kernel(data, indices):
    P, F = data.shape
    _, K = indices.shape
    out = nl.ndarray((P, K), dtype=data.dtype, buffer=nl.shared_hbm)
    d = nl.load(data)
    idx = nl.load(indices)
    nl.store(out, value=nl.gather_flattened(data=d, indices=idx))
    return out


def gather_flattened_ref(data, indices):
    return np.take_along_axis(data, indices.astype(np.int64), axis=1)


CASES = [
    {
        "name": "fp32_128x64_k32",
        "inputs": [
            {"name": "data", "shape": [128, 64], "dtype": "float32"},
            {"name": "indices", "shape": [128, 32], "dtype": "uint32", "dist": "randint", "low": 0, "high": 64},
        ],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
]
