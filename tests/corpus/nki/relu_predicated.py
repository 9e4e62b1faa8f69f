"""ReLU as a predicated copy: a zero tile from ``nisa.memset``, then
``nisa.tensor_copy_predicated`` writes x into it wherever ``x > 0``.

The predicate is a uint8 tile from ``nl.greater``; the copy updates its ``dst`` tile in
place (beta keyword form).  A second output counts the positive elements per row with
``nl.sum`` over the predicate cast to fp32.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "relu_predicated_kernel"
REFERENCE = "relu_predicated_ref"


@nki.jit
def relu_predicated_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    counts = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        positive = nl.greater(xt, 0.0, dtype=nl.uint8)
        res = nisa.memset(shape=(128, cols), value=0.0, dtype=x.dtype)
        nisa.tensor_copy_predicated(src=xt, dst=res, predicate=positive)
        nl.store(out[t * 128:(t + 1) * 128, :], value=res)
        n_pos = nl.sum(nl.copy(positive, dtype=nl.float32), axis=[1], keepdims=True)
        nl.store(counts[t * 128:(t + 1) * 128, :], value=n_pos)
    return out, counts


def relu_predicated_ref(x):
    return np.maximum(x, 0).astype(x.dtype), (x > 0).sum(axis=1, keepdims=True).astype(np.float32)


CASES = [
    {
        "name": "fp32_256x384",
        "inputs": [{"name": "x", "shape": [256, 384], "dtype": "float32"}],
        "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0,
    },
]
