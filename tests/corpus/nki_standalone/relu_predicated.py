"""ReLU by predicated copy into a zeroed tile, plus the count of positive elements per row,
nki 0.3+ style (``nisa.memset(dst, 0.0)``, ``nisa.tensor_copy_predicated(dst, src, predicate)``)."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "relu_predicated_kernel"
REFERENCE = "relu_predicated_ref"


@nki.jit
def relu_predicated_kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    counts = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in range(rows // 128):
        xt = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=xt, src=x[t * 128:(t + 1) * 128, :])
        positive = nl.ndarray((128, cols), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=positive, data=xt, op0=nl.greater, operand0=0.0)
        res = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.memset(dst=res, value=0.0)
        nisa.tensor_copy_predicated(dst=res, src=xt, predicate=positive)
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=res)
        n_pos = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(dst=n_pos, op=nl.add, data=positive, axis=1, keepdims=True)
        nisa.dma_copy(dst=counts[t * 128:(t + 1) * 128, :], src=n_pos)
    return out, counts


def relu_predicated_ref(x):
    return np.maximum(x, 0).astype(x.dtype), (x > 0).sum(axis=1, keepdims=True).astype(np.float32)


CASES = [
    {"name": "fp32_256x384", "inputs": [{"name": "x", "shape": [256, 384], "dtype": "float32"}],
     "rel_l2": 0.0, "rtol": 0.0, "atol": 0.0},
]
