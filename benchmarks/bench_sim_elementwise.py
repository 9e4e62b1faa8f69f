"""Benchmark (b): simulated instructions per second on [128, 512] fp32 element-wise ops.

Baseline, measured in the same run: the bare numpy op on the same arrays. Target: >= 30,000
simulated instructions/s.
"""

from __future__ import annotations

import time

import numpy as np

from evidence.nki import load_kernel, simulate

KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def chain(a, b, n_iters):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    for i in nl.sequential_range(n_iters):
        x = nl.add(x, y)
        x = nl.multiply(x, 0.5)
        x = nl.subtract(x, y)
        x = nl.maximum(x, y)
    nl.store(out, value=x)
    return out
'''


def main(n_iters: int = 2500) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((128, 512), dtype=np.float32)
    b = rng.standard_normal((128, 512), dtype=np.float32)
    kernel = load_kernel(KERNEL).chain
    simulate(kernel, a, b, 10)  # warm up
    t0 = time.perf_counter()
    sim = simulate(kernel, a, b, n_iters, keep_trace=False)
    elapsed = time.perf_counter() - t0
    n_instr = sim.report.instructions
    ips = n_instr / elapsed

    ops = (np.add, np.multiply, np.subtract, np.maximum)
    t0 = time.perf_counter()
    x = a
    for _ in range(n_iters):
        for op in ops:
            x = op(x, b if op is not np.multiply else np.float32(0.5))
    base = (time.perf_counter() - t0) / (4 * n_iters)

    print(f"(b) simulated {n_instr} instructions in {elapsed:.3f} s: {ips:,.0f} instructions/s (target >= 30,000)")
    print(f"    bare numpy op: {base * 1e6:.1f} us; simulated instruction: {1e6 / ips:.1f} us "
          f"(ratio {1 / ips / base:.2f}x numpy)")
    return ips


if __name__ == "__main__":
    main()
