"""The scheduler's semantics on small kernels: overlap, barriers, queues, capacity, attribution."""

from __future__ import annotations

import pytest

from evidence.nki.shim import language as nl
from evidence.nki.shim import typing as nt
from evidence.perf.estimate import estimate
from evidence.perf.spec import load_spec

from .conftest import trace

PIPELINE = """
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.{it}(x.shape[0] // 128):
            t = nl.load(x[i * 128:(i + 1) * 128, :])
            y = nl.exp(t)
            nl.store(out[i * 128:(i + 1) * 128, :], value=y)
        return out
"""
X = nt.tensor[[128 * 16, 2048], nl.bfloat16]


def test_affine_iterations_overlap_dma_and_compute_and_sequential_ones_do_not():
    affine = estimate(trace(PIPELINE.replace("{it}", "affine_range"), X))
    seq = estimate(trace(PIPELINE.replace("{it}", "sequential_range"), X))
    busy = affine.engine_busy_s
    dma = busy["dma_load"] + busy["dma_store"]  # time of the 16 DMA engines
    assert affine.time_s < dma + 0.3 * busy["scalar"]  # loads, exp and stores overlap
    assert affine.time_s >= max(dma, busy["scalar"])
    # a sequential iteration starts when the previous one (load, exp, store, 1.3 us latency each) ended
    assert seq.time_s > 1.4 * affine.time_s
    assert seq.engine_busy_s == busy  # same work, different schedule


def test_memory_bound_copy_reports_dma_bottleneck_intensity_zero_and_mbu():
    est = estimate(trace(PIPELINE.replace("{it}", "affine_range"), X))
    assert est.bottleneck == "dma" and est.flops == 0 and est.arithmetic_intensity == 0.0
    nbytes = 2 * 128 * 16 * 2048 * 2
    assert est.hbm_bytes == nbytes
    assert est.mbu == pytest.approx(nbytes / (410e9 * est.time_s))
    # the DMA engines are the lower roof on trn1; one load and one store latency on top
    assert est.lower_bound_s == pytest.approx(nbytes / 272e9 + 2 * 1300e-9)
    assert 0.5 < est.roofline_efficiency <= 1.0  # 4 KiB per partition transfers, well pipelined


def test_per_line_attribution_sums_to_the_estimate():
    est = estimate(trace(PIPELINE.replace("{it}", "affine_range"), X))
    assert sum(est.per_line.values()) == pytest.approx(est.time_s, rel=1e-6)
    assert all(k.startswith("k.py:") for k in est.per_line)


SMALL_VS_LARGE = """
    def kernel(x):
        out = nl.ndarray((128, 4096), dtype=x.dtype, buffer=nl.shared_hbm)
        for j in nl.affine_range(4096 // {f}):
            t = nl.load(x[0:128, j * {f}:(j + 1) * {f}])
            nl.store(out[0:128, j * {f}:(j + 1) * {f}], value=t)
        return out
"""


def test_small_transfers_cost_per_buffer_overhead():
    x = nt.tensor[[128, 4096], nl.float32]
    small = estimate(trace(SMALL_VS_LARGE.replace("{f}", "64"), x))  # 256 B per partition
    large = estimate(trace(SMALL_VS_LARGE.replace("{f}", "1024"), x))  # 4 KiB per partition
    spec = load_spec("trn1")
    eff = lambda b: b / (b + spec["dma_buffer_overhead_bytes"])  # noqa: E731
    ratio = small.engine_busy_s["dma_load"] / large.engine_busy_s["dma_load"]
    assert ratio == pytest.approx(eff(4096) / eff(256), rel=1e-6)
    assert small.time_s > 3 * large.time_s


CAPACITY = """
    def kernel(x):
        out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(4):
            t = nl.load(x[i * 128:(i + 1) * 128, :])       # 96 KiB per partition: one fits at a time
            s = nl.sum(t, axis=[1], keepdims=True)
            nl.store(out[:, i:i + 1], value=s)
        return out
"""


def test_sbuf_capacity_limits_how_far_loads_run_ahead():
    sim = trace(CAPACITY, nt.tensor[[512, 48 * 1024], nl.bfloat16])
    limited = estimate(sim)
    roomy = estimate(sim, spec_override={"params": {"sbuf_bytes_per_partition": 4 * 2**20}})
    # with room for every tile the next load overlaps the current reduction; without, it waits
    assert limited.time_s > 1.3 * roomy.time_s
    assert limited.engine_busy_s == roomy.engine_busy_s


REUSE = """
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        {outside}
        for i in nl.affine_range(x.shape[0] // 128):
            {inside}
            buf[...] = nl.load(x[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(buf))
        return out
"""


def test_a_buffer_declared_outside_the_loop_serialises_iterations():
    decl = "buf = nl.ndarray((128, 2048), dtype=x.dtype, buffer=nl.sbuf)"
    outside = estimate(trace(REUSE.replace("{outside}", decl).replace("{inside}", "pass"), X))
    inside = estimate(trace(REUSE.replace("{outside}", "pass").replace("{inside}", decl), X))
    assert outside.time_s > 1.3 * inside.time_s  # each load waits for the previous exp to read buf


MATMUL = """
    def kernel(a, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        lhs = nl.load(a)
        rhs = nl.load(b)
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        for k in nl.affine_range(2000):
            acc += nl.matmul(lhs, rhs, transpose_x=True)
        nl.store(out, value=nl.copy(acc))
        return out
"""


def test_compute_bound_matmul_names_tensor_and_reaches_the_roof():
    est = estimate(trace(MATMUL, nt.tensor[[128, 128], nl.bfloat16], nt.tensor[[128, 512], nl.bfloat16]))
    assert est.bottleneck == "tensor"
    assert est.engine_busy_s["tensor"] == pytest.approx(2000 * 512 / 2.8e9)  # REFERENCE §5.2: max(min(64,M),N) cycles
    assert est.mfu > 0.95 and est.roofline_efficiency > 0.95
    assert est.engine_busy_s["vector"] < 1e-6  # the PSUM memset is folded into the accumulation group
    assert est.arithmetic_intensity > est.ridge_point


def test_estimate_needs_the_trace():
    from evidence.nki.errors import EvidenceError

    sim = trace(MATMUL, nt.tensor[[128, 128], nl.bfloat16], nt.tensor[[128, 512], nl.bfloat16], keep_trace=False)
    with pytest.raises(EvidenceError, match="keep_trace"):
        estimate(sim)
