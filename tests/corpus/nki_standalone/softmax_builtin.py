"""``nl.softmax`` and the sum of 2x over each row through ``nisa.tensor_scalar_reduce``'s
``reduce_res`` (dst first: the scaled tile goes to dst, the row sum to reduce_res), nki 0.3+ style;
the kernel file calls ``nki.simulate`` on itself, as the real one is called, under ``__main__``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "softmax_builtin_kernel"
REFERENCE = "softmax_builtin_ref"


@nki.jit
def softmax_builtin_kernel(x):
    rows, cols = x.shape
    probs = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    twice_sums = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        nl.store(probs[t * 128:(t + 1) * 128, :], value=nl.softmax(xt, axis=1))
        scaled = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        acc = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(dst=scaled, data=xt, op0=nl.multiply, operand0=2.0, reduce_op=nl.add,
                                  reduce_res=acc)
        nl.store(twice_sums[t * 128:(t + 1) * 128, :], value=acc)
    return probs, twice_sums


def softmax_builtin_ref(x):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype), (2 * x64).sum(axis=1, keepdims=True).astype(np.float32)


CASES = [
    {"name": "fp32_256x512", "inputs": [{"name": "x", "shape": [256, 512], "dtype": "float32", "std": 2.0}],
     "atol": 1e-4},
]


if __name__ == "__main__":
    data = np.random.default_rng(0).normal(size=(128, 64)).astype(np.float32)
    got_probs, got_sums = nki.simulate(softmax_builtin_kernel)(data)
    print(np.abs(got_probs - softmax_builtin_ref(data)[0]).max())
