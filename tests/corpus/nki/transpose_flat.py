"""Transpose an [A, B] matrix stored flattened along the free axis of each row.

x is [P, A*B] (each row holds a row-major A x B block); out is [P, B*A] with the block
transposed.  Three-dimensional ``nl.arange`` lifts broadcast against each other into a
[P, A, B] index expression (numpy rules), so one load and one store per tile suffice;
the permutation is done by the destination index of an SBUF-to-SBUF ``nl.copy``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "transpose_flat_kernel"
REFERENCE = "transpose_flat_ref"


@nki.jit
def transpose_flat_kernel(x, a_size, b_size):
    P, F = x.shape
    assert F == a_size * b_size
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)

    i_p = nl.arange(P)[:, None, None]
    i_a = nl.arange(a_size)[None, :, None]
    i_b = nl.arange(b_size)[None, None, :]

    src = nl.load(x)
    dst = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    dst[i_p, i_b * a_size + i_a] = nl.copy(src[i_p, i_a * b_size + i_b])
    nl.store(out, value=dst)
    return out


def transpose_flat_ref(x, a_size, b_size):
    P = x.shape[0]
    return x.reshape(P, a_size, b_size).transpose(0, 2, 1).reshape(P, a_size * b_size).copy()


CASES = [
    {
        "name": "fp32_128x(6x40)",
        "inputs": [{"name": "x", "shape": [128, 240], "dtype": "float32"}],
        "args": [6, 40],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
    {
        "name": "fp32_96x(16x16)",
        "inputs": [{"name": "x", "shape": [96, 256], "dtype": "float32"}],
        "args": [16, 16],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
]
