"""Benchmark: cost-model estimate of the trace-only 4096 x 8192 x 8192 tiled matmul (~100k instructions).

Target: simulation (trace kept) plus estimate in <= 10 s. Baseline, measured in the same run: the
trace-only simulation alone without keeping the trace (what `bench_sim_trace_only.py` measures), so
the ratio shows what keeping the trace and scheduling it cost on top. CPU seconds of this process
are printed next to the wall-clock figures: on the shared machine the wall clock mostly measures the
other engineers' load.
"""

from __future__ import annotations

import time
from pathlib import Path

from evidence.nki import load_kernel, simulate
from evidence.nki.shim import language as nl
from evidence.nki.shim import typing as nt
from evidence.perf import estimate

KERNELS = Path(__file__).resolve().parents[1] / "tests" / "evidence" / "perf" / "kernels" / "matmul_tutorial.py"


def main() -> float:
    mod = load_kernel(KERNELS)
    args = nt.tensor[[8192, 4096], nl.bfloat16], nt.tensor[[8192, 8192], nl.bfloat16]
    t0, c0 = time.perf_counter(), time.process_time()
    simulate(mod.tiled, *args, target="trn1", trace_only=True, keep_trace=False)
    base, base_cpu = time.perf_counter() - t0, time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    sim = simulate(mod.tiled, *args, target="trn1", trace_only=True)
    t_sim = time.perf_counter() - t0
    est = estimate(sim)
    total, total_cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"estimate of the trace-only 4096x8192x8192 tiled matmul ({est.instructions} instructions): "
          f"{total:.2f} s wall, {total_cpu:.2f} s CPU (simulation {t_sim:.2f} s + schedule {total - t_sim:.2f} s; target <= 10 s); "
          f"baseline trace-only simulation without the trace {base:.2f} s wall, {base_cpu:.2f} s CPU: "
          f"{total / base:.2f}x wall, {total_cpu / base_cpu:.2f}x CPU. "
          f"Estimated {est.time_s * 1e3:.2f} ms on trn1 (published 51.80 ms), bottleneck {est.bottleneck}")
    return total


if __name__ == "__main__":
    main()
