"""Embedding lookup: out[n, :] = table[ids[n], :] with indirect (dynamic) DMA.

The int32 ids are loaded into SBUF as a [128, 1] tile; ``table[idx[i_p, 0], i_f]`` then
gathers one table row per partition in a single DMA.  Only the partition axis is
indexed dynamically, as the beta rules require.  Decorated ``@nki.jit()`` with parens.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "embedding_gather_kernel"
REFERENCE = "embedding_gather_ref"


@nki.jit()
def embedding_gather_kernel(table, ids):
    V, D = table.shape
    N = ids.shape[0]
    out = nl.ndarray((N, D), dtype=table.dtype, buffer=nl.shared_hbm)
    ids_col = ids.reshape((N, 1))

    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(D)[None, :]
    i_0 = nl.arange(1)[None, :]
    for t in nl.affine_range(N // 128):
        idx = nl.load(ids_col[t * 128 + i_p, i_0])
        rows = nl.load(table[idx[i_p, 0], i_f])
        nl.store(out[t * 128 + i_p, i_f], value=rows)
    return out


def embedding_gather_ref(table, ids):
    return table[ids.astype(np.int64)]


CASES = [
    {
        "name": "fp32_v1000_d256_n384",
        "data_dependent_addresses": True,
        "inputs": [
            {"name": "table", "shape": [1000, 256], "dtype": "float32"},
            {"name": "ids", "shape": [384], "dtype": "int32", "dist": "randint", "low": 0, "high": 1000},
        ],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
    {
        "name": "bf16_v64_d512_n128_repeats",
        "data_dependent_addresses": True,
        "inputs": [
            {"name": "table", "shape": [64, 512], "dtype": "bfloat16"},
            {"name": "ids", "shape": [128], "dtype": "int32", "dist": "randint", "low": 0, "high": 64},
        ],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
]
