"""Benchmark (a): a tiled bf16 matmul 2048 x 2048 x 2048 simulated, vs numpy's fp32 matmul.

Baseline, measured in the same run: `a.T @ b` in fp32 numpy on the same shapes. Target: the
simulation takes <= 3x the numpy time. Both sides run single-threaded BLAS (set before numpy is
imported): multi-threaded OpenBLAS on 128-wide tiles thrashes on shared cores and makes both
figures noise.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

from evidence.nki import load_kernel, simulate  # noqa: E402

KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

@nki.jit
def matmul_kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    KT, MT, NT = K // 128, M // 128, N // 512
    rhs_tiles = nl.ndarray((KT, nl.par_dim(128), N), dtype=rhs.dtype)
    for k in nl.affine_range(KT):
        rhs_tiles[k] = nl.load(rhs[k * 128:(k + 1) * 128, :])
    for m in nl.affine_range(MT):
        lhs_tiles = nl.ndarray((KT, nl.par_dim(128), 128), dtype=lhsT.dtype)
        for k in nl.affine_range(KT):
            lhs_tiles[k] = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
        for n in nl.affine_range(NT):
            acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(KT):
                acc += nisa.nc_matmul(lhs_tiles[k], rhs_tiles[k, :, n * 512:(n + 1) * 512])
            res = nl.copy(acc, dtype=nl.float32)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return out
'''


def main(size: int = 2048) -> float:
    rng = np.random.default_rng(0)
    lhsT = rng.standard_normal((size, size), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((size, size), dtype=np.float32).astype(ml_dtypes.bfloat16)
    kernel = load_kernel(KERNEL).matmul_kernel
    a32, b32 = lhsT.astype(np.float32), rhs.astype(np.float32)
    a32.T @ b32  # warm up BLAS
    t0 = time.perf_counter()
    expected = a32.T @ b32
    base = time.perf_counter() - t0
    t0 = time.perf_counter()
    sim = simulate(kernel, lhsT, rhs, keep_trace=False)
    elapsed = time.perf_counter() - t0
    err = float(np.linalg.norm(sim.outputs[0] - expected) / np.linalg.norm(expected))
    ratio = elapsed / base
    print(f"(a) bf16 matmul {size}^3: simulated in {elapsed:.3f} s ({sim.report.instructions} instructions), "
          f"numpy fp32 matmul {base:.3f} s: ratio {ratio:.2f}x (target <= 3x); rel L2 vs fp32 {err:.2e}")
    return ratio


if __name__ == "__main__":
    main()
