"""In-place y <- alpha * x + y on a ``nt.mutable_tensor`` parameter, which is returned.

Inputs are immutable unless annotated; this kernel annotates ``y`` and stores into it,
and, as the beta rules require, returns the mutated parameter.  ``alpha`` is a plain
Python float argument.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

KERNEL = "axpy_kernel"
REFERENCE = "axpy_ref"


@nki.jit
def axpy_kernel(x, y: nt.mutable_tensor, alpha):
    rows, cols = x.shape
    for t in nl.affine_range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        yt = nl.load(y[t * 128:(t + 1) * 128, :])
        nl.store(y[t * 128:(t + 1) * 128, :], value=nl.add(nl.multiply(xt, alpha), yt))
    return y


def axpy_ref(x, y, alpha):
    return (alpha * x.astype(np.float64) + y.astype(np.float64)).astype(y.dtype)


CASES = [
    {
        "name": "fp32_256x640_alpha-1.5",
        "inputs": [
            {"name": "x", "shape": [256, 640], "dtype": "float32"},
            {"name": "y", "shape": [256, 640], "dtype": "float32"},
        ],
        "args": [-1.5],
    },
]
