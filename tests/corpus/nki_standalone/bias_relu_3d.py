"""relu(x + bias) over [B, R, C] with 3-D HBM slices, nki 0.3+ style: the bias row is broadcast to
128 partitions by a stride-0 ``.ap()`` DMA, and each tile is fused add + relu on VectorE/ScalarE."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "bias_relu_3d_kernel"
REFERENCE = "bias_relu_3d_ref"


@nki.jit
def bias_relu_3d_kernel(x, bias):
    B, R, C = x.shape
    out = nl.ndarray((B, R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    bias_all = nl.ndarray((128, C), dtype=bias.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=bias_all, src=bias.ap(pattern=[[0, 128], [1, C]]))
    for b in range(B):
        for r in range(R // 128):
            for c in range(C // 512):
                xt = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=xt, src=x[b, nl.ds(r * 128, 128), nl.ds(c * 512, 512)])
                yt = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
                nisa.tensor_tensor(dst=yt, data1=xt, data2=bias_all[:, nl.ds(c * 512, 512)], op=nl.add)
                nisa.activation(dst=yt, op=nl.relu, data=yt)
                nisa.dma_copy(dst=out[b, nl.ds(r * 128, 128), nl.ds(c * 512, 512)], src=yt)
    return out


def bias_relu_3d_ref(x, bias):
    return np.maximum(x.astype(np.float64) + bias.astype(np.float64), 0.0).astype(x.dtype)


CASES = [
    {"name": "fp32_2x256x1024", "inputs": [{"name": "x", "shape": [2, 256, 1024], "dtype": "float32"},
                                           {"name": "bias", "shape": [1024], "dtype": "float32", "std": 0.5}]},
    {"name": "bf16_3x128x512", "inputs": [{"name": "x", "shape": [3, 128, 512], "dtype": "bfloat16"},
                                          {"name": "bias", "shape": [512], "dtype": "bfloat16"}],
     "rel_l2": 5e-3, "rtol": 1e-2, "atol": 1e-2},
]
