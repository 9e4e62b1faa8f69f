"""benchmarks/bench_sim_scaling.py's workloads compute what they should and stay clean: the benchmark times
the simulator's bookkeeping as kernels grow, which says nothing if a workload stopped on an error, was
refused, or (the rotations) tripped the placement check it is meant to exercise legally."""

from __future__ import annotations

import numpy as np
import pytest

import benchmarks.bench_sim_scaling as bench
from evidence.nki import load_kernel, simulate

@pytest.mark.parametrize("workload", bench.WORKLOADS, ids=lambda w: w.entry + "-" + w.name.split()[0])
def test_each_workload_runs_clean_and_matches_numpy(workload):
    kernel = getattr(load_kernel(workload.source, display=f"{workload.entry}.py"), workload.entry)
    args = workload.make_args(workload.small // 4)
    sim = simulate(kernel, *args)
    expected = workload.expected(*args)
    # the block workload sums bf16 copies; the others are fp32 throughout
    tol = 2e-2 * np.abs(expected).max() if "block" in workload.name else 1e-4 * np.abs(expected).max()
    np.testing.assert_allclose(sim.outputs[0], expected, rtol=0, atol=tol)
    assert [f.code for f in sim.report.findings if f.severity in ("high", "medium")] == []
    assert sim.report.instructions > 40
