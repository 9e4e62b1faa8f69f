"""Matmul whose K reduction is written ``acc[...] = acc + nl.matmul(...)``.

The values equal the ``+=`` form, but the explicit read-add-write is not a TensorE
accumulation group: each K step becomes a separate PSUM result plus a VectorE add that
reads both PSUM tiles.  Everything else (bf16 operands, hoisted wide loads, 128 x 512
tiles) is already right.  Inside ``affine_range`` the re-assignment is also a loop-carried
dependency that only the ``+=`` accumulation form is exempt from.  Partner:
``psum_accumulate_opt.py``.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "psum_naive_kernel"
REFERENCE = "psum_ref"
EXPECTED_FINDINGS = ["nki.psum-accumulate-not-inplace", "nki.affine-loop-carried-dependency"]


@nki.jit
def psum_naive_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)

    lhsT_sb = nl.ndarray((KT, nl.par_dim(128), M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_sb = nl.ndarray((KT, nl.par_dim(128), N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(KT):
        lhsT_sb[k] = nl.load(lhsT[k * 128:(k + 1) * 128, :])
        rhs_sb[k] = nl.load(rhs[k * 128:(k + 1) * 128, :])

    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                acc[...] = acc + nl.matmul(lhsT_sb[k, :, m * 128:(m + 1) * 128],
                                           rhs_sb[k, :, n * 512:(n + 1) * 512], transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc, dtype=nl.bfloat16))
    return out


def psum_ref(lhsT, rhs):
    import ml_dtypes

    return (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)


CASES = [
    {
        "name": "bf16_k384_m512_n1024",
        "inputs": [
            {"name": "lhsT", "shape": [384, 512], "dtype": "bfloat16"},
            {"name": "rhs", "shape": [384, 1024], "dtype": "bfloat16"},
        ],
        "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1,
    },
]
