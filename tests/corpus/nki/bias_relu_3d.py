"""relu(x + bias) over a [B, R, C] tensor with a 3-deep loop nest (batch, row tile,
column tile) and ``nl.ds`` slices on HBM and SBUF.

The bias row is loaded once and broadcast to 128 partitions before the loops; each
iteration takes its 512-column slice of that tile.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "bias_relu_3d_kernel"
REFERENCE = "bias_relu_3d_ref"


@nki.jit
def bias_relu_3d_kernel(x, bias):
    B, R, C = x.shape
    out = nl.ndarray((B, R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    bias_all = nl.load(bias.reshape((1, C))).broadcast_to((128, C))
    for b in nl.affine_range(B):
        for r in nl.affine_range(R // 128):
            for c in nl.affine_range(C // 512):
                xt = nl.load(x[b, nl.ds(r * 128, 128), nl.ds(c * 512, 512)])
                yt = nl.relu(nl.add(xt, bias_all[:, nl.ds(c * 512, 512)]))
                nl.store(out[b, nl.ds(r * 128, 128), nl.ds(c * 512, 512)], value=yt)
    return out


def bias_relu_3d_ref(x, bias):
    return np.maximum(x.astype(np.float64) + bias.astype(np.float64), 0.0).astype(x.dtype)


CASES = [
    {
        "name": "fp32_2x256x1024",
        "inputs": [
            {"name": "x", "shape": [2, 256, 1024], "dtype": "float32"},
            {"name": "bias", "shape": [1024], "dtype": "float32", "std": 0.5},
        ],
    },
    {
        "name": "bf16_3x128x512",
        "inputs": [
            {"name": "x", "shape": [3, 128, 512], "dtype": "bfloat16"},
            {"name": "bias", "shape": [512], "dtype": "bfloat16"},
        ],
        "rel_l2": 5e-3, "rtol": 1e-2, "atol": 1e-2,
    },
]
