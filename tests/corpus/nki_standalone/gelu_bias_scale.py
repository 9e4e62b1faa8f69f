"""gelu(scale * x + row_bias) fused into one ``nisa.activation`` (bias is a [128, 1] column),
nki 0.3+ style. The output is a trailing argument the kernel writes (and returns nothing); the
bias vector is reshaped in HBM to a column."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "gelu_bias_scale_kernel"
REFERENCE = "gelu_bias_scale_ref"


@nki.jit
def gelu_bias_scale_kernel(x, row_bias, y, scale=1.0):
    rows, cols = x.shape
    bias_col = row_bias.reshape((rows, 1))
    for t in range(rows // 128):
        xt = nl.load(x[t * 128:(t + 1) * 128, :])
        bt = nl.load(bias_col[t * 128:(t + 1) * 128, :])
        act = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=act, op=nl.gelu_apprx_tanh, data=xt, bias=bt, scale=scale)
        nisa.dma_copy(dst=y[t * 128:(t + 1) * 128, :], src=act)


def gelu_bias_scale_ref(x, row_bias, scale=1.0):
    z = scale * x.astype(np.float64) + row_bias.astype(np.float64)[:, None]
    return (0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z ** 3)))).astype(np.float32)


CASES = [
    {"name": "fp32_256x512_scale0.5",
     "inputs": [{"name": "x", "shape": [256, 512], "dtype": "float32", "std": 2.0},
                {"name": "row_bias", "shape": [256], "dtype": "float32", "std": 0.5}],
     "outputs": [{"name": "y", "shape": [256, 512], "dtype": "float32"}], "kwargs": {"scale": 0.5}},
    {"name": "fp32_128x256_default_scale",
     "inputs": [{"name": "x", "shape": [128, 256], "dtype": "float32"},
                {"name": "row_bias", "shape": [128], "dtype": "float32"}],
     "outputs": [{"name": "y", "shape": [128, 256], "dtype": "float32"}]},
]
