"""Causal single-head attention per SPMD instance (one head each), dst-first ISA.

Q^T K on TensorE into PSUM, scaling and the causal mask in one GpSimd ``affine_select`` (pattern
[[-1, S]] with channel_multiplier 1: keep where row - col >= 0), row max and exp fused in
``activation`` with the running sum in ``reduce_res``, then P^T through ``nc_transpose`` and P V
on TensorE; 1/sum applied on eviction.
"""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "attention_kernel"
REFERENCE = "attention_ref"


@nki.jit
def attention_kernel(qT, kT, v):
    h = nl.program_id(0)
    _, d, s = qT.shape  # [heads, d, S]: d on partitions for Q^T K
    out = nl.ndarray((qT.shape[0], s, d), dtype=nl.float32, buffer=nl.shared_hbm)
    q_t = nl.ndarray((d, s), dtype=qT.dtype, buffer=nl.sbuf)
    k_t = nl.ndarray((d, s), dtype=kT.dtype, buffer=nl.sbuf)
    v_t = nl.ndarray((s, d), dtype=v.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=q_t, src=qT[h])
    nisa.dma_copy(dst=k_t, src=kT[h])
    nisa.dma_copy(dst=v_t, src=v[h])
    scores = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(scores, q_t, k_t)
    sc = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=sc, data=scores, op0=nl.multiply, operand0=1.0 / np.sqrt(d))
    masked = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    nisa.affine_select(masked, [[-1, s]], 1, sc, -1e30, cmp_op=nl.greater_equal)
    neg_max = nl.ndarray((s, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=neg_max, op=nl.maximum, data=masked, axis=1, negate=True, keepdims=True)
    p = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    total = nl.ndarray((s, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=p, op=nl.exp, data=masked, bias=neg_max, reduce_op=nl.add, reduce_res=total,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    p_t_ps = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=p_t_ps, data=p)
    p_t = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=p_t, src=p_t_ps)
    o_ps = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(o_ps, p_t, v_t)
    inv = nl.ndarray((s, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(dst=inv, data=total)
    o = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=o, data=o_ps, op0=nl.multiply, operand0=inv)
    nisa.dma_copy(dst=out[h], src=o)
    return out


def attention_ref(qT, kT, v):
    q = np.swapaxes(qT.astype(np.float64), 1, 2)
    k = np.swapaxes(kT.astype(np.float64), 1, 2)
    s = q @ np.swapaxes(k, 1, 2) / np.sqrt(q.shape[-1])
    s = np.where(np.tril(np.ones(s.shape[1:], bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True) @ v.astype(np.float64)).astype(np.float32)


CASES = [
    {"name": "fp32_h2_s128_d64", "grid": [2], "rel_l2": 1e-5, "atol": 1e-5, "inputs": [
        {"name": "qT", "shape": [2, 64, 128], "dtype": "float32"},
        {"name": "kT", "shape": [2, 64, 128], "dtype": "float32"},
        {"name": "v", "shape": [2, 128, 64], "dtype": "float32"}]},
    {"name": "bf16_h3_s64_d32", "grid": [3], "rel_l2": 2e-2, "rtol": 5e-2, "atol": 5e-2, "inputs": [
        {"name": "qT", "shape": [3, 32, 64], "dtype": "bfloat16"},
        {"name": "kT", "shape": [3, 32, 64], "dtype": "bfloat16"},
        {"name": "v", "shape": [3, 64, 32], "dtype": "bfloat16"}]},
]
