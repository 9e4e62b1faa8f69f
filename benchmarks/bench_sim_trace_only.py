"""Benchmark (c): trace-only report of a 4096 x 8192 x 8192 bf16 matmul (tutorial tiling).

Arguments are `nt.tensor[[K, M], nl.bfloat16]` placeholders: no arithmetic, shapes only. Target:
the whole report in <= 10 s. Baseline, measured in the same run: the full simulation of the same
kernel on a 1/64-size problem (512 x 1024 x 1024), scaled by instruction count.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

from evidence.nki import load_kernel, simulate  # noqa: E402

KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                a = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                b = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc += nl.matmul(a, b, transpose_x=True)
            res = nl.copy(acc, dtype=out.dtype)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res)
    return out

def placeholders(M, K, N):
    return nt.tensor[[K, M], nl.bfloat16], nt.tensor[[K, N], nl.bfloat16]
'''


def main() -> float:
    mod = load_kernel(KERNEL)
    # baseline: full simulation of a small instance
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 512), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((1024, 1024), dtype=np.float32).astype(ml_dtypes.bfloat16)
    t0 = time.perf_counter()
    small = simulate(mod.matmul_tiled, a, b, keep_trace=False)
    small_t = time.perf_counter() - t0
    per_instr = small_t / small.report.instructions

    t0 = time.perf_counter()
    sim = simulate(mod.matmul_tiled, *mod.placeholders(4096, 8192, 8192), trace_only=True, keep_trace=False)
    elapsed = time.perf_counter() - t0
    r = sim.report
    print(f"(c) trace-only 4096x8192x8192 matmul report in {elapsed:.2f} s (target <= 10 s): "
          f"{r.instructions} instructions, {r.matmul_flops / 1e12:.2f} TFLOP, HBM read {r.hbm_read_bytes / 2**30:.2f} GiB "
          f"(redundant {r.redundant_hbm_read_bytes / 2**30:.2f} GiB), {r.dma_count} DMAs")
    full_equiv = per_instr * r.instructions
    print(f"    full simulation at the small instance's rate would take ~{full_equiv:.1f} s: "
          f"trace-only is {full_equiv / elapsed:.1f}x faster per instruction")
    return elapsed


if __name__ == "__main__":
    main()
