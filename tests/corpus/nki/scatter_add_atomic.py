"""Scatter-add rows into a table: acc[ids[n], :] += values[n, :], duplicates included.

The CUDA idiom is ``atomicAdd``; the beta NKI equivalent is ``nl.atomic_rmw`` on an
HBM destination with an indirect partition index.  ``acc`` is an ``nt.mutable_tensor``
parameter that the kernel updates in place and returns.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

KERNEL = "scatter_add_kernel"
REFERENCE = "scatter_add_ref"


@nki.jit
def scatter_add_kernel(acc: nt.mutable_tensor, values, ids):
    N, D = values.shape
    ids_col = ids.reshape((N, 1))
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(D)[None, :]
    i_0 = nl.arange(1)[None, :]
    for t in nl.affine_range(N // 128):
        idx = nl.load(ids_col[t * 128 + i_p, i_0])
        v = nl.load(values[t * 128 + i_p, i_f])
        nl.atomic_rmw(acc[idx[i_p, 0], i_f], value=v, op=np.add)
    return acc


def scatter_add_ref(acc, values, ids):
    out = acc.astype(np.float64)
    np.add.at(out, ids.astype(np.int64), values.astype(np.float64))
    return out.astype(acc.dtype)


CASES = [
    {
        "name": "fp32_table50x128_n256",
        "data_dependent_addresses": True,
        "inputs": [
            {"name": "acc", "shape": [50, 128], "dtype": "float32"},
            {"name": "values", "shape": [256, 128], "dtype": "float32"},
            {"name": "ids", "shape": [256], "dtype": "int32", "dist": "randint", "low": 0, "high": 50},
        ],
        "rtol": 1e-5, "atol": 1e-4,
    },
]
