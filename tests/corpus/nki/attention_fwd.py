"""Small single-head attention forward with high-level ``nl`` calls.

out = softmax(q k^T / sqrt(d)) v for q [128, d], k/v [Sk, d] with Sk <= 512.  q and k
are loaded transposed by the DMA (``load_transpose2d``) so the score matmul contracts
over d on the partition axis; the probability tile is transposed back 128 keys at a
time with ``nl.transpose`` and accumulated against v in one PSUM tile.  The row
normalisation is applied after the second matmul.
"""
import math

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

# Static findings this kernel has on purpose (the exp(s - max) stays a separate subtract then exp, as the high-level nl tutorial writes it).
EXPECTED_FINDINGS = ["nki.unfused-activation"]
KERNEL = "attention_fwd_kernel"
REFERENCE = "attention_fwd_ref"


@nki.jit
def attention_fwd_kernel(q, k, v):
    Sq, d = q.shape
    Sk, _ = k.shape
    out = nl.ndarray((Sq, d), dtype=q.dtype, buffer=nl.shared_hbm)

    qT = nl.load_transpose2d(q)
    kT = nl.load_transpose2d(k)
    scores = nl.matmul(qT, kT, transpose_x=True)
    scaled = nl.multiply(scores, 1.0 / math.sqrt(d))
    row_max = nl.max(scaled, axis=[1], keepdims=True)
    probs = nl.exp(nl.subtract(scaled, row_max))
    denom = nl.sum(probs, axis=[1], keepdims=True)

    acc = nl.zeros((Sq, d), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(Sk // 128):
        pT = nl.copy(nl.transpose(probs[:, j * 128:(j + 1) * 128]))
        v_tile = nl.load(v[j * 128:(j + 1) * 128, :])
        acc += nl.matmul(pT, v_tile, transpose_x=True)
    nl.store(out, value=nl.divide(acc, denom))
    return out


def attention_fwd_ref(q, k, v):
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    s = q64 @ k64.T / math.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p @ v64 / p.sum(axis=1, keepdims=True)).astype(q.dtype)


CASES = [
    {
        "name": "fp32_q128_k256_d64",
        "inputs": [
            {"name": "q", "shape": [128, 64], "dtype": "float32"},
            {"name": "k", "shape": [256, 64], "dtype": "float32"},
            {"name": "v", "shape": [256, 64], "dtype": "float32"},
        ],
    },
    {
        "name": "fp32_q128_k512_d128",
        "inputs": [
            {"name": "q", "shape": [128, 128], "dtype": "float32", "std": 0.5},
            {"name": "k", "shape": [512, 128], "dtype": "float32", "std": 0.5},
            {"name": "v", "shape": [512, 128], "dtype": "float32"},
        ],
    },
]
