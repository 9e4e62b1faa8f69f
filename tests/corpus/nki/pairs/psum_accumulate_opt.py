"""Matmul with the K reduction as a TensorE accumulation group: ``acc += nl.matmul(...)``.

Same computation and tiling as ``psum_accumulate_naive.py``; the in-place ``+=`` into
the fp32 PSUM tile lets TensorE accumulate in the PSUM bank with no VectorE adds.
"""
import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

KERNEL = "psum_opt_kernel"
REFERENCE = "psum_ref"
EXPECTED_FINDINGS = []


@nki.jit
def psum_opt_kernel(lhsT, rhs):
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
                acc += nl.matmul(lhsT_sb[k, :, m * 128:(m + 1) * 128],
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
