"""Batched matmul on 3-D SBUF tiles, nki 0.3+ style: ``nisa.nc_matmul(dst, a[:, i, :], b[:, i, :])``
takes one batch's [K, M] / [K, N] operands as integer-indexed views, and writes into an
integer-indexed slice of a 3-D PSUM tile; a second kernel multiplies a [K, B*N] operand whose free
part has two axes (NKI flattens it)."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "batched_matmul_kernel"
REFERENCE = "batched_matmul_ref"


@nki.jit
def batched_matmul_kernel(lhsT, rhs):
    K, B, M = lhsT.shape
    _, _, N = rhs.shape
    out = nl.ndarray((M, B, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(lhsT)  # [K, B, M]
    b = nl.load(rhs)  # [K, B, N]
    prod = nl.ndarray((M, B, N), dtype=nl.float32, buffer=nl.psum)
    for i in range(B):
        nisa.nc_matmul(prod[:, i, :], a[:, i, :], b[:, i, :])
    res = nl.ndarray((M, B, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=prod)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def shared_lhs_kernel(lhsT, rhs):
    """All batches of rhs against the first batch of lhsT: one matmul over a [K, B, N] moving tile."""
    K, _, M = lhsT.shape
    _, B, N = rhs.shape
    out = nl.ndarray((M, B, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(lhsT)
    b = nl.load(rhs)
    acc = nl.ndarray((M, B, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=a[:, 0, :], moving=b)
    res = nl.ndarray((M, B, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


def batched_matmul_ref(lhsT, rhs):
    a, b = lhsT.astype(np.float64), rhs.astype(np.float64)
    return np.einsum("kbm,kbn->mbn", a, b).astype(np.float32)


def shared_lhs_ref(lhsT, rhs):
    a, b = lhsT.astype(np.float64), rhs.astype(np.float64)
    return np.einsum("km,kbn->mbn", a[:, 0, :], b).astype(np.float32)


CASES = [
    {"name": "fp32_k128_b4_m64_n96", "atol": 1e-4, "inputs": [
        {"name": "lhsT", "shape": [128, 4, 64], "dtype": "float32"},
        {"name": "rhs", "shape": [128, 4, 96], "dtype": "float32"}]},
    {"name": "shared_lhs", "kernel": "shared_lhs_kernel", "reference": "shared_lhs_ref", "atol": 1e-4, "inputs": [
        {"name": "lhsT", "shape": [96, 2, 32], "dtype": "float32", "dist": "uniform"},
        {"name": "rhs", "shape": [96, 4, 64], "dtype": "float32", "dist": "uniform"}]},
]
