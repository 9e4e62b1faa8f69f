"""Benchmark (a): a tiled bf16 matmul 2048 x 2048 x 2048 simulated, vs numpy's fp32 matmul.

Baselines, measured in the same run: `a.T @ b` in fp32 numpy on the same shapes, once with BLAS
pinned to one thread and once with numpy's default threads. Targets: the simulation takes <= 3x
the default-threaded numpy time (the simulator runs its matmuls on worker threads, one per core,
with single-threaded BLAS inside; see evidence/nki/pipeline.py). Each figure is the best of
`--repeat N` runs (default 3): the machine is shared, so single runs are noisy.
"""

from __future__ import annotations

import sys
import time

import ml_dtypes
import numpy as np
from threadpoolctl import threadpool_limits

from evidence.nki import load_kernel, simulate

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


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(size: int = 2048, repeat: int = 3) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    lhsT = rng.standard_normal((size, size), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((size, size), dtype=np.float32).astype(ml_dtypes.bfloat16)
    kernel = load_kernel(KERNEL).matmul_kernel
    a32, b32 = lhsT.astype(np.float32), rhs.astype(np.float32)
    expected = a32.T @ b32  # warms up BLAS and its threads
    with threadpool_limits(limits=1, user_api="blas"):
        base_1t = _best(lambda: a32.T @ b32, repeat)
    base = _best(lambda: a32.T @ b32, repeat)
    sims = []
    elapsed = _best(lambda: sims.append(simulate(kernel, lhsT, rhs, keep_trace=False)), repeat)
    sim = sims[-1]
    err = float(np.linalg.norm(sim.outputs[0] - expected) / np.linalg.norm(expected))
    print(f"(a) bf16 matmul {size}^3: simulated in {elapsed:.3f} s ({sim.report.instructions} instructions); "
          f"numpy fp32 matmul {base:.3f} s with default threads: ratio {elapsed / base:.2f}x (target <= 3x), "
          f"{base_1t:.3f} s single-threaded: ratio {elapsed / base_1t:.2f}x; rel L2 vs fp32 {err:.2e}")
    return elapsed / base, elapsed / base_1t


if __name__ == "__main__":
    main(repeat=int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 3)
