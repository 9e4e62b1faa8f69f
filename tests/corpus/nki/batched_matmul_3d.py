"""Batched small matmuls whose operands are 3-D SBUF tiles: out[b] = lhsT[:, b, :].T @ rhs[:, b, :].

Both operands are loaded once as [K, B, F] tiles; each batch slice ``t[:, b, :]`` is a
[K, 1, F] operand whose free axes TensorE flattens; the results gather in one SBUF tile.
The second kernel reads the operands through a three-axis ``nl.mgrid`` and accumulates a
[M, B*N]-shaped matmul result into a PSUM tile laid out [M, B, N].
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "batched_matmul_kernel"
REFERENCE = "batched_matmul_ref"


@nki.jit
def batched_matmul_kernel(lhsT, rhs):
    K, B, M = lhsT.shape
    _, _, N = rhs.shape
    out = nl.ndarray((M, B, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a = nl.load(lhsT)  # [K, B, M]
    b = nl.load(rhs)  # [K, B, N]
    res = nl.ndarray((M, B, N), dtype=nl.float32)
    for i in nl.affine_range(B):
        prod = nisa.nc_matmul(stationary=a[:, i, :], moving=b[:, i, :])  # [M, N]
        res[:, i, :] = nl.copy(prod)
    nl.store(out, value=res)
    return out


@nki.jit
def shared_lhs_kernel(lhsT, rhs):
    """All batches of rhs against the first batch of lhsT, through a three-axis grid."""
    K, _, M = lhsT.shape
    _, B, N = rhs.shape
    out = nl.ndarray((M, B, N), dtype=nl.float32, buffer=nl.shared_hbm)
    ik, ib, i_n = nl.mgrid[0:K, 0:B, 0:N]
    a = nl.load(lhsT)
    b = nl.load(rhs[ik, ib, i_n])
    acc = nl.zeros((M, B, N), dtype=nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(a[:, 0, :], b)  # a [M, B*N] result into the [M, B, N] accumulator
    nl.store(out, value=nl.copy(acc))
    return out


def batched_matmul_ref(lhsT, rhs):
    a, b = lhsT.astype(np.float64), rhs.astype(np.float64)
    return np.einsum("kbm,kbn->mbn", a, b).astype(np.float32)


def shared_lhs_ref(lhsT, rhs):
    a, b = lhsT.astype(np.float64), rhs.astype(np.float64)
    return np.einsum("km,kbn->mbn", a[:, 0, :], b).astype(np.float32)


CASES = [
    {
        "name": "fp32_k128_b4_m64_n96",
        "atol": 1e-4,
        "inputs": [
            {"name": "lhsT", "shape": [128, 4, 64], "dtype": "float32"},
            {"name": "rhs", "shape": [128, 4, 96], "dtype": "float32"},
        ],
    },
    {
        "name": "shared_lhs_grid",
        "kernel": "shared_lhs_kernel",
        "reference": "shared_lhs_ref",
        "atol": 1e-4,
        "inputs": [
            {"name": "lhsT", "shape": [96, 2, 32], "dtype": "float32", "dist": "uniform"},
            {"name": "rhs", "shape": [96, 4, 64], "dtype": "float32", "dist": "uniform"},
        ],
    },
]
