"""Accumulation depth: the longest chain of element-wise additions the simulator saw (the error
model's K for running sums that no single instruction reduces), in both dialects and whether or not
the trace is kept."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from evidence.nki import load_kernel, simulate

from .conftest import run_source

ROWSUM = """
    def kernel(x):
        rows, cols = x.shape
        out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        for t in nl.affine_range(rows // 128):
            tile = nl.load(x[t * 128:(t + 1) * 128, :])
            total = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)  # a new chain per row tile
            for j in nl.sequential_range(cols):
                total[...] = nisa.tensor_tensor(total, tile[:, j:j + 1], np.add, dtype=nl.float32)
            nl.store(out[t * 128:(t + 1) * 128, :], value=total)
        return out
"""

X = np.random.default_rng(0).standard_normal((256, 48)).astype(np.float32)


@pytest.mark.parametrize("keep", [True, False])
def test_a_running_sum_over_a_sequential_loop_is_as_deep_as_its_steps(keep):
    sim, _ = run_source(ROWSUM, "kernel", X, keep_trace=keep)
    assert sim.report.accumulation_depth == 48  # per row tile: the two row tiles do not chain
    np.testing.assert_allclose(sim.outputs[0][:, 0], X.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_a_fresh_name_per_step_chains_like_an_in_place_update():
    sim, _ = run_source("""
        def kernel(x):
            out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
            tile = nl.load(x[0:128, :])
            acc = nl.copy(tile[:, 0:1])
            for j in nl.sequential_range(1, 32):
                acc = nl.add(acc, tile[:, j:j + 1])  # rebinding the name: each step reads the last result
            nl.store(out, value=acc)
            return out
    """, "kernel", X[:128, :32])
    assert sim.report.accumulation_depth == 31


def test_products_single_adds_and_integer_sums_are_not_accumulations():
    sim, _ = run_source("""
        def kernel(x, k):
            out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.load(x[0:128, 0:8])
            s = nl.add(t, t)  # one addition
            p = nl.multiply(s, 0.5)
            for j in nl.sequential_range(16):
                p = nl.multiply(p, 1.0)  # a chain of products: no accumulation
            n = nl.load(k)
            for j in nl.sequential_range(16):
                n = nl.add(n, n)  # integer sums are exact
            nl.store(out, value=p)
            return out
    """, "kernel", X[:, :8], np.ones((128, 8), np.int32))
    assert sim.report.accumulation_depth == 1


def test_python_range_running_sum_in_the_standalone_dialect():
    src = textwrap.dedent("""
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def kernel(x):
            rows, cols = x.shape
            out = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.shared_hbm)
            tile = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=x)
            carry = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
            nisa.memset(dst=carry, value=0.0)
            running = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
            for j in range(cols):
                nisa.tensor_tensor(dst=carry, data1=carry, data2=tile[:, j:j + 1], op=nl.add)
                nisa.tensor_copy(dst=running[:, j:j + 1], src=carry)
            nisa.dma_copy(dst=out, src=running)
            return out
    """)
    kernel = load_kernel(src, display="k.py").kernel
    sim = simulate(kernel, X[:128, :40], keep_trace=False)
    assert sim.report.dialect == "standalone" and sim.report.accumulation_depth == 40
    np.testing.assert_allclose(sim.outputs[0], np.cumsum(X[:128, :40].astype(np.float64), axis=1), rtol=1e-5,
                               atol=1e-5)
