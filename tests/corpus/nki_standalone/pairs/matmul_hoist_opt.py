"""bf16 matmul, nki 0.3+ style, with both operands loaded once as whole K-row strips into 3-D
SBUF tiles ([128, KT, M] and [128, KT, N]) and sliced from there; each output tile accumulates in
one PSUM tile (the first ``nc_matmul`` overwrites, later ones add). Partner: ``matmul_hoist_naive.py``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "matmul_opt_kernel"
REFERENCE = "matmul_ref"
EXPECTED_FINDINGS = []


@nki.jit
def matmul_opt_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // 128
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    lhsT_sb = nl.ndarray((128, KT, M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rhs_sb = nl.ndarray((128, KT, N), dtype=rhs.dtype, buffer=nl.sbuf)
    for k in range(KT):
        nisa.dma_copy(dst=lhsT_sb[:, k, :], src=lhsT[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=rhs_sb[:, k, :], src=rhs[k * 128:(k + 1) * 128, :])
    for m in range(M // 128):
        for n in range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in range(KT):
                nisa.nc_matmul(acc, lhsT_sb[:, k, m * 128:(m + 1) * 128], rhs_sb[:, k, n * 512:(n + 1) * 512])
            res = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.tensor_copy(dst=res, src=acc)
            nisa.dma_copy(dst=out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], src=res)
    return out


def matmul_ref(lhsT, rhs):
    import ml_dtypes

    return (lhsT.astype(np.float64).T @ rhs.astype(np.float64)).astype(np.float32).astype(ml_dtypes.bfloat16)


CASES = [
    {"name": "bf16_k512_m512_n1024", "inputs": [{"name": "lhsT", "shape": [512, 512], "dtype": "bfloat16"},
                                                {"name": "rhs", "shape": [512, 1024], "dtype": "bfloat16"}],
     "rel_l2": 8e-3, "rtol": 2e-2, "atol": 2e-1},
]
