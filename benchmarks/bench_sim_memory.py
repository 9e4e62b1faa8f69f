"""Benchmark (d): peak RSS of a simulation whose tensors (2 inputs + 1 output) total 1 GiB.

Baseline, measured in the same run: the peak RSS of plain numpy doing the same computation
(`a + b` into a new array) on the same inputs. Target: simulation peak RSS <= 3 GiB.
"""

from __future__ import annotations

import resource
import time

import numpy as np

from evidence.nki import load_kernel, simulate

KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def add_kernel(a, b):
    rows, cols = a.shape
    out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
        x = nl.load(a[t * 128:(t + 1) * 128, :])
        y = nl.load(b[t * 128:(t + 1) * 128, :])
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.add(x, y))
    return out
'''
GIB = 2**30


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main() -> int:
    cols = 2048
    rows = (GIB // 3 // (cols * 4)) // 128 * 128
    a = np.ones((rows, cols), dtype=np.float32)
    b = np.full((rows, cols), 2.0, dtype=np.float32)
    total = 3 * a.nbytes
    kernel = load_kernel(KERNEL).add_kernel
    base = np.add(a, b)
    baseline_peak = peak_rss()
    del base
    t0 = time.perf_counter()
    sim = simulate(kernel, a, b, keep_trace=False)
    elapsed = time.perf_counter() - t0
    ok = bool(sim.outputs[0][-1, -1] == 3.0)
    peak = peak_rss()
    print(f"(d) tensors total {total / GIB:.2f} GiB: simulation peak RSS {peak / GIB:.2f} GiB (target <= 3 GiB), "
          f"numpy baseline peak {baseline_peak / GIB:.2f} GiB: ratio {peak / baseline_peak:.2f}x; "
          f"{sim.report.instructions} instructions in {elapsed:.1f} s; output correct: {ok}")
    return peak


if __name__ == "__main__":
    main()
