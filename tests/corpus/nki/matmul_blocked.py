"""Blocked matmul with hoisted loads, in the style compilers and the tutorial's last
steps emit.

Every operand tile is loaded exactly once into SBUF tensors with a leading block
dimension (``(KT, nl.par_dim(128), M)``); the M/N/K loop nest then runs TensorE on
SBUF-resident blocks only.  Results of one M block are staged in a blocked SBUF buffer
and written out in a second loop.  ``nisa`` calls use keywords throughout.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

KERNEL = "matmul_blocked_kernel"
REFERENCE = "matmul_blocked_ref"


@nki.jit
def matmul_blocked_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, MT, NT = K // 128, M // 128, N // 512
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    lhsT_sb = nl.ndarray((KT, nl.par_dim(128), M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_sb = nl.ndarray((KT, nl.par_dim(128), N), dtype=rhs.dtype, buffer=nl.sbuf)
    for kt in nl.affine_range(KT):
        lhsT_sb[kt, :, :] = nl.load(lhsT[kt * 128:(kt + 1) * 128, :])
        rhs_sb[kt, :, :] = nl.load(rhs[kt * 128:(kt + 1) * 128, :])

    i_res = nl.mgrid[0:128, 0:512]
    for mt in nl.affine_range(MT):
        res_sb = nl.ndarray((NT, nl.par_dim(128), 512), dtype=out.dtype, buffer=nl.sbuf)
        for nt in nl.affine_range(NT):
            acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
            for kt in nl.affine_range(KT):
                acc += nisa.nc_matmul(
                    stationary=lhsT_sb[kt, :, nl.ds(mt * 128, 128)],
                    moving=rhs_sb[kt, :, nl.ds(nt * 512, 512)],
                )
            res_sb[nt, i_res.p, i_res.x] = nisa.tensor_copy(src=acc, dtype=out.dtype, engine=nisa.vector_engine)
        for nt in nl.affine_range(NT):
            nl.store(out[mt * 128 + i_res.p, nt * 512 + i_res.x], value=res_sb[nt, i_res.p, i_res.x])
    return out


def matmul_blocked_ref(lhsT, rhs):
    return (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(lhsT.dtype)


CASES = [
    {
        "name": "fp32_k256_m256_n1024",
        "atol": 1e-4,  # K-term dot products can cancel towards 0
        "inputs": [
            {"name": "lhsT", "shape": [256, 256], "dtype": "float32"},
            {"name": "rhs", "shape": [256, 1024], "dtype": "float32"},
        ],
    },
    {
        "name": "bf16_k384_m128_n512",
        "inputs": [
            {"name": "lhsT", "shape": [384, 128], "dtype": "bfloat16"},
            {"name": "rhs", "shape": [384, 512], "dtype": "bfloat16"},
        ],
        "rel_l2": 8e-3, "rtol": 2e-2, "atol": 1e-1,
    },
]
