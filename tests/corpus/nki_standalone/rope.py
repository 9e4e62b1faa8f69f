"""Rotary position embedding on interleaved (even, odd) pairs, nki 0.3+ style: the even and odd
columns are read from HBM with stride-2 ``.ap()`` patterns and the rotated halves written back
through stride-2 ``.ap()`` views of the SBUF result."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "rope_kernel"
REFERENCE = "rope_ref"


@nki.jit
def rope_kernel(x, cos, sin):
    S, D = x.shape
    half = D // 2
    out = nl.ndarray((S, D), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(S // 128):
        x_even = nl.ndarray((128, half), dtype=x.dtype, buffer=nl.sbuf)
        x_odd = nl.ndarray((128, half), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x_even, src=x.ap(pattern=[[D, 128], [2, half]], offset=t * 128 * D))
        nisa.dma_copy(dst=x_odd, src=x.ap(pattern=[[D, 128], [2, half]], offset=t * 128 * D + 1))
        c = nl.load(cos[t * 128:(t + 1) * 128, :])
        s = nl.load(sin[t * 128:(t + 1) * 128, :])
        ec, os_, es, oc = (nl.ndarray((128, half), dtype=nl.float32, buffer=nl.sbuf) for _ in range(4))
        nisa.tensor_tensor(dst=ec, data1=x_even, data2=c, op=nl.multiply)
        nisa.tensor_tensor(dst=os_, data1=x_odd, data2=s, op=nl.multiply)
        nisa.tensor_tensor(dst=es, data1=x_even, data2=s, op=nl.multiply)
        nisa.tensor_tensor(dst=oc, data1=x_odd, data2=c, op=nl.multiply)
        rot = nl.ndarray((128, D), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=rot.ap(pattern=[[D, 128], [2, half]]), data1=ec, data2=os_, op=nl.subtract)
        nisa.tensor_tensor(dst=rot.ap(pattern=[[D, 128], [2, half]], offset=1), data1=es, data2=oc, op=nl.add)
        nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=rot)
    return out


def rope_ref(x, cos, sin):
    x64 = x.astype(np.float64)
    ev, od = x64[:, 0::2], x64[:, 1::2]
    c, s = cos.astype(np.float64), sin.astype(np.float64)
    out = np.empty_like(x64)
    out[:, 0::2] = ev * c - od * s
    out[:, 1::2] = ev * s + od * c
    return out.astype(x.dtype)


CASES = [
    {"name": "fp32_256x128", "inputs": [
        {"name": "x", "shape": [256, 128], "dtype": "float32"},
        {"name": "cos", "shape": [256, 64], "dtype": "float32", "dist": "uniform", "low": -1.0, "high": 1.0},
        {"name": "sin", "shape": [256, 64], "dtype": "float32", "dist": "uniform", "low": -1.0, "high": 1.0}]},
]
