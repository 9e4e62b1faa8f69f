"""bf16 matmul, nki 0.3+ style, that DMAs both operand tiles inside the innermost K loop: every
lhsT tile is re-read for each column block and every rhs tile for each row block, in 256-byte
per-partition transfers. Partner: ``matmul_hoist_opt.py``."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

KERNEL = "matmul_naive_kernel"
REFERENCE = "matmul_ref"
EXPECTED_FINDINGS = ["nki.hoistable-load", "nki.small-dma"]


@nki.jit
def matmul_naive_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in range(K // 128):
                a = nl.ndarray((128, 128), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((128, 512), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                nisa.nc_matmul(acc, a, b)
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
