"""Causal self-attention, one SPMD program instance per head, written against the ISA.

q/k/v are [H, S, d] with S = 128.  TensorE transposes q and k (PSUM, then copied to
SBUF), computes the scores, and multiplies the transposed probabilities by v.  The
causal mask is one GpSimd ``affine_select`` on an ``nl.mgrid`` predicate; softmax
statistics stay fp32 (``tensor_reduce`` with ``negate``, ``activation_reduce``), and
the 1/sum scaling is deferred to the [S, d] output tile.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "causal_attention_kernel"
REFERENCE = "causal_attention_ref"


@nki.jit
def causal_attention_kernel(q, k, v, softmax_scale):
    H, S, d = q.shape
    out = nl.ndarray((H, S, d), dtype=q.dtype, buffer=nl.shared_hbm)
    h = nl.program_id(axis=0)

    q_sb = nl.load(q[h])
    k_sb = nl.load(k[h])
    v_sb = nl.load(v[h])
    qT = nisa.tensor_copy(src=nisa.nc_transpose(q_sb))
    kT = nisa.tensor_copy(src=nisa.nc_transpose(k_sb))

    s_psum = nisa.nc_matmul(stationary=qT, moving=kT)
    s_sb = nisa.tensor_scalar(data=s_psum, op0=np.multiply, operand0=softmax_scale, dtype=nl.float32)
    i_q, i_k = nl.mgrid[0:S, 0:S]
    masked = nisa.affine_select(pred=(i_q - i_k >= 0), on_true_tile=s_sb[i_q, i_k],
                                on_false_value=-9984.0, dtype=nl.float32)

    neg_max = nisa.tensor_reduce(op=np.max, data=masked, axis=(1,), negate=True, keepdims=True)
    row_sum = nl.ndarray((S, 1), dtype=nl.float32, buffer=nl.sbuf)
    probs = nisa.activation_reduce(op=nl.exp, data=masked, bias=neg_max, reduce_op=np.add,
                                   reduce_res=row_sum, dtype=nl.float32)
    pT = nisa.tensor_copy(src=nisa.nc_transpose(probs))
    o_psum = nisa.nc_matmul(stationary=pT, moving=v_sb)
    inv = nisa.reciprocal(data=row_sum)
    o = nisa.tensor_scalar(data=o_psum, op0=np.multiply, operand0=inv, dtype=q.dtype)
    nl.store(out[h], value=o)
    return out


def causal_attention_ref(q, k, v, softmax_scale):
    q64, k64, v64 = (a.astype(np.float64) for a in (q, k, v))
    S = q.shape[1]
    s = np.einsum("hqd,hkd->hqk", q64, k64) * softmax_scale
    s = np.where(np.tril(np.ones((S, S), dtype=bool))[None], s, -np.inf)
    p = np.exp(s - s.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    return np.einsum("hqk,hkd->hqd", p, v64).astype(q.dtype)


CASES = [
    {
        "name": "fp32_h2_s128_d64",
        "grid": [2],
        "inputs": [
            {"name": "q", "shape": [2, 128, 64], "dtype": "float32"},
            {"name": "k", "shape": [2, 128, 64], "dtype": "float32"},
            {"name": "v", "shape": [2, 128, 64], "dtype": "float32"},
        ],
        "args": [0.125],
    },
    {
        "name": "fp32_h3_s128_d32",
        "grid": [3],
        "inputs": [
            {"name": "q", "shape": [3, 128, 32], "dtype": "float32"},
            {"name": "k", "shape": [3, 128, 32], "dtype": "float32"},
            {"name": "v", "shape": [3, 128, 32], "dtype": "float32"},
        ],
        "args": [0.1767766952966369],
    },
]
