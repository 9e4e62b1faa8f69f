"""LayerNorm with the ``nl`` conveniences over a ragged last row tile, nki 0.3+ style: slices
bound the valid rows instead of masks, gamma and beta are broadcast across partitions with
stride-0 ``.ap()`` loads, and mean/variance are fp32 ``nl.mean`` results."""
import numpy as np

import nki
import nki.language as nl

KERNEL = "layernorm_nl_kernel"
REFERENCE = "layernorm_nl_ref"


@nki.jit
def layernorm_nl_kernel(x, gamma, beta, eps):
    rows, D = x.shape
    out = nl.ndarray((rows, D), dtype=x.dtype, buffer=nl.shared_hbm)
    g_b = nl.load(gamma.ap(pattern=[[0, 128], [1, D]]))
    b_b = nl.load(beta.ap(pattern=[[0, 128], [1, D]]))
    for t in range((rows + 127) // 128):
        lo = t * 128
        n = min(rows, lo + 128) - lo
        xt = nl.load(x[lo:lo + n, :])
        mean = nl.mean(xt, axis=1, keepdims=True, dtype=nl.float32)
        xc = nl.subtract(xt, mean)
        var = nl.mean(nl.square(xc), axis=1, keepdims=True, dtype=nl.float32)
        rstd = nl.rsqrt(nl.add(var, eps))
        y = nl.add(nl.multiply(nl.multiply(xc, rstd), g_b[0:n, :]), b_b[0:n, :])
        nl.store(out[lo:lo + n, :], value=y)
    return out


def layernorm_nl_ref(x, gamma, beta, eps):
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mu) ** 2).mean(axis=1, keepdims=True)
    y = (x64 - mu) / np.sqrt(var + eps) * gamma[None, :] + beta[None, :]
    return y.astype(x.dtype)


CASES = [
    {"name": "fp32_200x384", "inputs": [
        {"name": "x", "shape": [200, 384], "dtype": "float32", "mean": 1.5, "std": 2.0},
        {"name": "gamma", "shape": [384], "dtype": "float32", "dist": "uniform", "low": 0.5, "high": 1.5},
        {"name": "beta", "shape": [384], "dtype": "float32", "std": 0.1}], "args": [1e-5]},
]
