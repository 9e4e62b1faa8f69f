"""Tiny instructions by choice or by the data: a per-element walk of a wide tile is thread-per-lane
work the rubric caps; a decode step whose 4 tokens are the whole free axis is what the data allows."""

from __future__ import annotations

import numpy as np

from evidence.nki.shim import language as nl
from evidence.nki.shim import typing as nt
from evidence.nki.trace_items import trace_fact_items

from .conftest import run_source

DECODE = """
    def kernel(x_t, w):
        H, T = x_t.shape
        out = nl.ndarray((w.shape[1], T), dtype=nl.float32, buffer=nl.shared_hbm)
        xs = nl.ndarray((H // 128, nl.par_dim(128), T), dtype=x_t.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(H // 128):
            xs[k] = nl.load(x_t[k * 128:(k + 1) * 128, :])
        for m in nl.affine_range(w.shape[1] // 128):
            acc = nl.zeros((nl.par_dim(128), T), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(H // 128):
                wt = nl.load(w[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                acc += nisa.nc_matmul(wt, xs[k])
            nl.store(out[m * 128:(m + 1) * 128, :], value=nl.copy(acc))
        return out
"""

COLUMN_WALK = """
    def kernel(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        total = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.sequential_range(x.shape[1]):
            total[...] = nl.add(total, t[:, j:j + 1])
        nl.store(out, value=total)
        return out
"""


def _partition_use(sim):
    items = trace_fact_items(sim.report, "k.py", "sim", None, lambda file, line: None)
    return next(i for i in items if i.kind == "sim.partition_use")


def test_a_decode_step_as_wide_as_its_tokens_is_data_bounded():
    rng = np.random.default_rng(0)
    sim, _ = run_source(DECODE, "kernel", rng.standard_normal((256, 4), dtype=np.float32),
                        rng.standard_normal((256, 256), dtype=np.float32))
    assert sim.report.tiny_instr_count > 0 and sim.report.tiny_walk_count == 0
    use = _partition_use(sim)
    assert use.labels["tiny_work"] == "data_bounded" and use.metrics["free_elements_mean"] < 8


def test_a_column_walk_of_a_wide_tile_is_walked():
    sim, _ = run_source(COLUMN_WALK, "kernel", nt.tensor[[128, 64], nl.float32], trace_only=True)
    assert sim.report.tiny_walk_count == 64  # every add takes one column of the [128, 64] tile
    assert _partition_use(sim).labels["tiny_work"] == "walked"


def test_a_column_load_of_a_wide_hbm_matrix_is_walked():
    src = """
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for j in nl.affine_range(x.shape[1]):
            nl.store(out[:, j:j + 1], value=nl.exp(nl.load(x[:, j:j + 1])))
        return out
    """
    sim, _ = run_source(src, "kernel", nt.tensor[[128, 32], nl.float32], trace_only=True)
    assert sim.report.tiny_walk_count >= 64  # the column loads and stores, though each exp covers its tile whole
    assert _partition_use(sim).labels["tiny_work"] == "walked"


def test_a_partition_column_of_a_long_vector_is_walked():
    # one element per partition per instruction over a flat vector, as a CUDA block of 128 threads would
    src = """
    def kernel(x):
        y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        xv, yv = x.reshape((x.shape[0] // 128, 128)), y.reshape((x.shape[0] // 128, 128))
        for b in nl.affine_range(x.shape[0] // 128):
            nl.store(yv[b, :], value=nl.exp(nl.load(xv[b, :])))
        return y
    """
    sim, _ = run_source(src, "kernel", nt.tensor[[4096], nl.float32], trace_only=True)
    assert sim.report.tiny_walk_count >= 64  # 32 loads and 32 stores of 1 of the 32 elements a partition could take
    assert _partition_use(sim).labels["tiny_work"] == "walked"
