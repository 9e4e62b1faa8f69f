"""Row softmax through the ``nl.softmax`` helper plus a fused scale-and-sum reduction.

Second output: row sums of 2 * x from one ``nisa.tensor_scalar_reduce`` (multiply by a
constant, add-reduce into a [P, 1] accumulator).  Decorated ``@nki.jit(mode="simulation")``
as the SDK doc tests are.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "softmax_builtin_kernel"
REFERENCE = "softmax_builtin_ref"


@nki.jit(mode="simulation")
def softmax_builtin_kernel(x):
    rows, cols = x.shape
    probs = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    twice_sums = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        nl.store(probs[t * 128:(t + 1) * 128, :], value=nl.softmax(xt, axis=1))
        acc = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(data=xt, op0=np.multiply, operand0=2.0, reduce_op=np.add,
                                  reduce_res=acc)
        nl.store(twice_sums[t * 128:(t + 1) * 128, :], value=acc)
    return probs, twice_sums


def softmax_builtin_ref(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype), (2 * x64).sum(axis=1, keepdims=True).astype(np.float32)


CASES = [
    {
        "name": "fp32_256x512",
        "inputs": [{"name": "x", "shape": [256, 512], "dtype": "float32", "std": 2.0}],
        "atol": 1e-4,
    },
]
