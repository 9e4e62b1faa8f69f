"""Speed machinery that must not change results: TensorE jobs on worker threads, index grids as
strided views, lazily allocated block dimensions."""

from __future__ import annotations

import threading
import time

import numpy as np
import psutil
import pytest

from evidence.nki import simulate
from evidence.nki import strided
from evidence.nki.pipeline import default_workers

from .conftest import run_source

MATMULS = """
    def kernel(lhsT, rhs):
        K, M = lhsT.shape
        _, N = rhs.shape
        out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
        stat = nl.ndarray((K // 128, nl.par_dim(128), M), dtype=lhsT.dtype)
        for k in nl.affine_range(K // 128):
            stat[k] = nl.load(lhsT[k * 128:(k + 1) * 128, :])
        for n in nl.affine_range(N // 256):
            mov = nl.ndarray((128, 256), dtype=rhs.dtype)
            acc = nl.zeros((M, 256), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                mov[...] = nl.load(rhs[k * 128:(k + 1) * 128, n * 256:(n + 1) * 256])  # rewritten: WAR hazard
                acc += nisa.nc_matmul(stat[k], mov)
            part = nisa.nc_matmul(stat[0], mov)  # read later than the accumulation: a fresh result
            res = nl.add(nl.copy(acc), part)
            nl.store(out[:, n * 256:(n + 1) * 256], value=res)
        return out
"""


def _reference(lhsT, rhs):
    a, b = lhsT.astype(np.float64), rhs.astype(np.float64)
    out = a.T @ b
    for n in range(rhs.shape[1] // 256):
        out[:, n * 256:(n + 1) * 256] += a[:128].T @ b[-128:, n * 256:(n + 1) * 256]
    return out


@pytest.fixture
def operands():
    rng = np.random.default_rng(7)
    return rng.standard_normal((512, 128), dtype=np.float32), rng.standard_normal((512, 1024), dtype=np.float32)


def test_worker_threads_give_the_serial_results_trace_and_report(monkeypatch, operands):
    runs = {}
    for workers in ("0", "3"):
        monkeypatch.setenv("NKI_SIM_WORKERS", workers)
        sim, _ = run_source(MATMULS, "kernel", *operands)
        runs[workers] = sim
    serial, threaded = runs["0"], runs["3"]
    assert np.array_equal(serial.outputs[0], threaded.outputs[0])  # bit for bit
    assert serial.report.model_dump() == threaded.report.model_dump()
    assert serial.trace == threaded.trace
    # liveness is the kernel's, not the pending jobs': acc and the matmul result it accumulates (last
    # iteration's `part`, still bound to its name, was last read by its nl.add)
    assert serial.report.psum_peak_banks == 2
    np.testing.assert_allclose(threaded.outputs[0], _reference(*operands), rtol=1e-4, atol=1e-3)


def test_errors_with_jobs_in_flight_surface_and_leave_nothing_running(monkeypatch, operands):
    monkeypatch.setenv("NKI_SIM_WORKERS", "2")
    body = MATMULS.replace("        return out", "        bad = nl.ndarray((256, 8), dtype=nl.float32)\n        return out")
    with pytest.raises(Exception) as info:
        run_source(body, "kernel", *operands)
    assert getattr(info.value, "code", "") == "err_num_partition_exceed_arch_limit"
    sim, _ = run_source(MATMULS, "kernel", *operands)  # the next simulation is unaffected
    np.testing.assert_allclose(sim.outputs[0], _reference(*operands), rtol=1e-4, atol=1e-3)


def _os_threads() -> set[int]:
    import os

    return {int(t) for t in os.listdir("/proc/self/task")}


def test_no_worker_thread_outlives_the_simulation(monkeypatch, operands):
    """The sandbox's monitor counts threads a submission leaves running (security.system_access):
    the simulator's own workers are joined before simulate() returns, also after an error."""
    monkeypatch.setenv("NKI_SIM_WORKERS", "3")
    run_source(MATMULS, "kernel", *operands)  # imports, BLAS pools: whatever starts once per process
    before = _os_threads()
    run_source(MATMULS, "kernel", *operands)
    # no new thread (an earlier test's helper thread may end meanwhile: a subset, not equality)
    assert _os_threads() <= before
    assert not [t for t in threading.enumerate() if t.name.startswith("nki-sim-tensore")]
    body = MATMULS.replace("        return out", "        bad = nl.ndarray((256, 8), dtype=nl.float32)\n        return out")
    with pytest.raises(Exception):
        run_source(body, "kernel", *operands)
    assert _os_threads() <= before


def test_worker_count_follows_the_environment(monkeypatch):
    monkeypatch.setenv("NKI_SIM_WORKERS", "0")
    assert default_workers() == 0
    monkeypatch.setenv("NKI_SIM_WORKERS", "3")
    assert default_workers() == 3


def test_affine_index_grids_become_strided_views_and_others_stay_gathers():
    grid = (128, 64)
    rows = 5 * 128 + np.arange(128).reshape(128, 1)
    cols = 2 * np.arange(64).reshape(1, 64) + 1
    base = np.arange(1024 * 256, dtype=np.float32).reshape(1024, 256)
    p = strided.plan([rows, cols], base.shape, grid)
    v = strided.view(base, p, grid)
    assert np.shares_memory(v, base) and np.array_equal(v, base[rows, cols])
    v[3, 4] = -1.0  # writes land in place
    assert base[5 * 128 + 3, 9] == -1.0
    transposed = strided.plan([np.arange(64).reshape(1, 64), np.arange(128).reshape(128, 1)], base.shape, grid)
    assert np.array_equal(strided.view(base, transposed, grid), base[:64, :128].T)
    assert strided.plan([rows + 512, cols], base.shape, grid) is None  # out of range: a mask decides
    window = np.arange(64).reshape(1, 64, 1) + np.arange(3).reshape(1, 1, 3)  # pooling windows overlap
    assert strided.plan([np.arange(128).reshape(128, 1, 1), window], base.shape, (128, 64, 3)) is None
    squares = (np.arange(64) ** 2).reshape(1, 64)  # not affine
    assert strided.plan([np.arange(128).reshape(128, 1), squares], base.shape, grid) is None


def test_compiler_style_subscripts_read_and_write_through_views():
    body = """
        def kernel(a):
            rows, cols = a.shape
            out = nl.ndarray((rows, cols), dtype=a.dtype, buffer=nl.shared_hbm)
            buf = nl.ndarray((rows // 128, nl.par_dim(128), cols), dtype=a.dtype)
            for i in nl.affine_range(rows // 128):
                buf[i, nl.arange(128)[:, None], nl.arange(cols)[None, :]] = nl.load(
                    a[i * 128 + nl.arange(128)[:, None], nl.arange(cols)[None, :]])
            for i in nl.affine_range(rows // 128):
                t = nl.multiply(buf[i, nl.arange(128)[:, None], nl.arange(cols)[None, :]], 2.0)
                nl.store(out[i * 128 + nl.arange(128)[:, None], nl.arange(cols)[None, :]], value=t)
            return out
    """
    a = np.random.default_rng(0).standard_normal((384, 96)).astype(np.float32)
    sim, _ = run_source(body, "kernel", a)
    np.testing.assert_array_equal(sim.outputs[0], 2 * a)
    assert {f.code for f in sim.report.findings} == {"block_dimensions_deprecated"}


def test_block_dimension_tensors_cost_memory_only_for_the_blocks_written():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
            big = nl.ndarray((12, 32, 5, nl.par_dim(128), 1024), dtype=nl.float32)  # 1 GiB if allocated whole
            big[3, 7, 2] = nl.load(a)
            big[11, 0, 4] = nl.exp(big[3, 7, 2])
            nl.store(out, value=nl.add(big[3, 7, 2], big[11, 0, 4]))
            return out
    """
    a = np.random.default_rng(0).standard_normal((128, 1024)).astype(np.float32)
    before = psutil.Process().memory_info().rss
    sim, _ = run_source(body, "kernel", a)
    grown = psutil.Process().memory_info().rss - before
    np.testing.assert_allclose(sim.outputs[0], a + np.exp(a), rtol=1e-6)
    assert grown < 256 * 2**20, f"RSS grew by {grown / 2**20:.0f} MiB"


def test_reading_a_never_written_block_is_undefined_data():
    body = """
        def kernel(a):
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            big = nl.ndarray((4, nl.par_dim(128), 64), dtype=nl.float32)
            big[0] = nl.load(a)
            nl.store(out, value=nl.add(big[0], big[2]))  # <- block 2 never written
            return out
    """
    a = np.ones((128, 64), np.float32)
    sim, src = run_source(body, "kernel", a)
    assert np.isnan(sim.outputs[0]).all()  # lazily zero-paged memory still reads as undefined (NaN)
    codes = {f.code for f in sim.report.findings}
    assert "uninitialized_read" in codes


def test_affine_forms_of_index_expressions_match_their_values():
    """The form an index expression carries (its values are built from it, and subscripts are planned
    from it without reading them) gives the values numpy computes for the same expression."""
    from evidence.nki.indexing import arange, mgrid

    ip, iq, ir = mgrid[0:4, 3:9:2, 0:5]
    np_p, np_q, np_r = (np.arange(4)[:, None, None], np.arange(3, 9, 2)[None, :, None], np.arange(5)[None, None, :])
    col, row = (lambda *r: np.arange(*r)[:, None]), (lambda *r: np.arange(*r)[None, :])
    cases = [
        (arange(128)[:, None] + 3, col(128) + 3), (7 * arange(2, 64, 3)[None, :] - 1, 7 * row(2, 64, 3) - 1),
        (5 - arange(10)[:, None] * 2, 5 - col(10) * 2), (arange(8)[:, None] * 4 + arange(16)[None, :], col(8) * 4 + row(16)),
        (ip * 5 + ir, np_p * 5 + np_r), (iq - ip + 2, np_q - np_p + 2), (-(iq * 3), -(np_q * 3)),
        (2 * (ip + 1) + iq, 2 * (np_p + 1) + np_q), (arange(6)[None, :, None] + arange(6)[:, None, None] * 6,
                                                     np.arange(6)[None, :, None] + np.arange(6)[:, None, None] * 6),
        ((arange(4)[:, None] + 1) * 3 - arange(3)[None, :], (col(4) + 1) * 3 - row(3)),
        (arange(10, 0, -3)[None, :] + 1, row(10, 0, -3) + 1), (arange(1)[:, None] + 9, col(1) + 9),
    ]
    for e, values in cases:
        assert e.form is not None and e.shape == values.shape and np.array_equal(e.a, values), e
        start, steps = e.form
        expected = np.full(values.shape, start, dtype=np.int64)
        for g, s in steps:
            shape = [1] * values.ndim
            shape[g] = values.shape[g]
            expected = expected + s * np.arange(values.shape[g]).reshape(shape)
        assert np.array_equal(expected, values), e
    assert np.array_equal((arange(16)[:, None] % 5).a, np.arange(16)[:, None] % 5)  # not affine: computed values
    assert (arange(8)[:, None] * arange(8)[None, :]).form is None  # not affine
    assert (arange(8)[:, None] % 3).form is None
    assert arange(8)[2:].form is None  # a sub-slice: the values are scanned instead


def test_the_compiler_style_fast_path_makes_the_views_of_the_general_path():
    """`x[i, k * 128 + nl.arange(128)[:, None], ...]` is served from a recipe cached per subscript
    structure; every subscript it serves gives the view the general indexing path gives."""
    from evidence.nki import state as _state
    from evidence.nki import alloc as allocs
    from evidence.nki import subscripts, tensor
    from evidence.nki.indexing import arange, mgrid
    from evidence.nki.ops import OPS

    st = _state.State("trn2", False, {}, OPS, False, 0)
    prev = _state.set_current(st)
    try:
        data = np.arange(3 * 4 * 128 * 96, dtype=np.float32).reshape(3, 4, 128, 96)
        alloc = allocs.Alloc(st, "sbuf", data.shape, np.dtype(np.float32), data, pdim=2)
        alloc.wmask = np.zeros(data.shape, bool)
        t = tensor.Tensor.whole(alloc)
        ip, ix = mgrid[0:64, 0:32]
        views = [  # served by the fast path
            (1, 2, arange(128)[:, None], arange(96)[None, :]), (2, -1, 64 + arange(64)[:, None], 3 * arange(32)[None, :]),
            (0, 3, ip * 2, ix + 64), (1, 0, arange(96)[None, :], arange(96)[:, None]),  # a transposed read
            (2, 1, arange(128)[:, None]), (0, 0, 127 - arange(128)[:, None], arange(5, 90, 7)[None, :]),
            (1, arange(4)[:, None], 5),
        ]
        for key in views:
            fast, general = subscripts.affine_view(t, key), subscripts.index_general(t, key)
            assert fast is not None, key
            assert fast.shape == general.shape and fast.block == general.block, key
            expected = general.read() if general.adv is not None else general.data
            assert np.array_equal(fast.data, expected) and np.shares_memory(fast.data, data), key
            assert np.shares_memory(fast.wmask, alloc.wmask), key
        others = [  # left to the general path: out of range (a mask may make it legal), not affine, a bad integer
            (2, 2, 100 + arange(64)[:, None], arange(96)[None, :]), (0, 1, arange(128)[:, None], arange(96)[None, :] // 2),
        ]
        for key in others:
            assert subscripts.affine_view(t, key) is None and subscripts.index_general(t, key).adv is not None, key
        assert subscripts.affine_view(t, (5, 0, arange(128)[:, None])) is None  # the general path reports it
    finally:
        _state.set_current(prev)


def test_compiler_style_matmul_with_copies_as_jobs_gives_the_serial_results_trace_and_report(monkeypatch):
    """Benchmark (e)'s kernel, small: PSUM groups copied out to a block-dimension tensor as pipeline jobs
    while the kernel's Python runs ahead, two SPMD instances reusing the lazily mapped tensors."""
    import benchmarks.bench_sim_generated as bench
    from evidence.nki import load_kernel

    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 1024), dtype=np.float32)
    b = rng.standard_normal((1024, 2048), dtype=np.float32)
    kernel = load_kernel(bench.KERNEL).sg0000
    runs = {}
    for workers in ("0", "2"):
        monkeypatch.setenv("NKI_SIM_WORKERS", workers)
        runs[workers] = simulate(kernel[2], a, b)
    serial, threaded = runs["0"], runs["2"]
    assert np.array_equal(serial.outputs[0], threaded.outputs[0])
    assert serial.report.model_dump() == threaded.report.model_dump()
    assert serial.trace == threaded.trace
    np.testing.assert_allclose(threaded.outputs[0], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_lazily_mapped_tensors_are_reused_across_spmd_instances_and_read_as_never_written(monkeypatch):
    from evidence.nki import page_pool

    made = []

    class Counted(page_pool._Mapping):
        def __init__(self, nbytes: int) -> None:
            made.append(nbytes)
            super().__init__(nbytes)

    monkeypatch.setattr(page_pool, "_Mapping", Counted)
    body = """
        def kernel(a):
            i = nl.program_id(0)
            out = nl.ndarray((2, 128, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
            big = nl.ndarray((2, nl.par_dim(128), 16384), dtype=nl.float32)  # 16 MiB and a 4 MiB mask: mapped
            big[i, :, 0:2048] = nl.load(a)
            nl.store(out[i], value=nl.add(big[i, :, 0:2048], big[1 - i, :, 0:2048]))  # the other block: never written
            return out
    """
    a = np.ones((128, 2048), np.float32)
    sim, _ = run_source(body, "kernel", a, grid=(2,))
    assert made == [2 * 128 * 16384 * 4, 2 * 128 * 16384]  # data and mask, mapped once for both instances
    # instance 1 reads block 0, which instance 0 wrote into the same memory: still never written for instance 1
    assert np.isnan(sim.outputs[0]).all()
    assert "uninitialized_read" in {f.code for f in sim.report.findings}


def test_stores_of_copied_psum_tiles_as_jobs_give_the_serial_results_trace_and_report(monkeypatch):
    """Benchmark (a)'s kernel: `res = nl.copy(acc)` then `nl.store(out[...], value=res)`, both behind the
    accumulation's jobs; HBM write stamps and findings stay in program order."""
    import ml_dtypes

    import benchmarks.bench_sim_matmul as bench
    from evidence.nki import load_kernel

    rng = np.random.default_rng(5)
    lhsT = rng.standard_normal((512, 256), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rhs = rng.standard_normal((512, 1024), dtype=np.float32).astype(ml_dtypes.bfloat16)
    kernel = load_kernel(bench.KERNEL).matmul_kernel
    runs = {}
    for workers in ("0", "2"):
        monkeypatch.setenv("NKI_SIM_WORKERS", workers)
        runs[workers] = simulate(kernel, lhsT, rhs)
    serial, threaded = runs["0"], runs["2"]
    assert np.array_equal(serial.outputs[0], threaded.outputs[0])
    assert serial.report.model_dump() == threaded.report.model_dump()
    assert serial.trace == threaded.trace
    assert [None if w is None else w.tolist() for w in serial.written] == [
        None if w is None else w.tolist() for w in threaded.written]
    np.testing.assert_allclose(threaded.outputs[0], lhsT.astype(np.float32).T @ rhs.astype(np.float32), rtol=1e-4,
                               atol=1e-3)


class _Allocation:
    """What the pipeline keeps on an allocation (alloc.Alloc) for its hazards."""

    def __init__(self) -> None:
        self.writer = self.whole_writer = self.block_writers = None
        self.readers = []


def _wait_until(cond) -> None:
    deadline = time.monotonic() + 5
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert cond()


def test_writes_to_different_blocks_do_not_wait_for_each_other():
    from evidence.nki.pipeline import Pipeline

    pipe, a, gate, order = Pipeline(2), _Allocation(), threading.Event(), []
    try:
        pipe.run(lambda: order.append("whole write"), writes=(a,))
        pipe.run(lambda: (gate.wait(5), order.append("block 0")), writes=(a,), block=0)
        pipe.run(lambda: order.append("block 1"), writes=(a,), block=1)
        pipe.run(lambda: order.append("block 1 again"), writes=(a,), block=1)
        _wait_until(lambda: "block 1 again" in order)  # while block 0's job is still held up
        pipe.run(lambda: order.append("read anywhere"), reads=(a,))
        time.sleep(0.1)  # room for the read to run too early
        assert "read anywhere" not in order  # it waits for block 0's writer
        gate.set()
        pipe.settle(reads=(a,))
        pipe.drain()
    finally:
        gate.set()
        pipe.close()
    assert order == ["whole write", "block 1", "block 1 again", "block 0", "read anywhere"]


def test_settling_an_allocation_waits_for_every_block_writer(monkeypatch, operands):
    """PSUM groups copied into the blocks of a block-dimension tile by jobs that run in any order, then
    read back whole by the kernel: the serial results, bit for bit."""
    body = """
    def kernel(lhsT, rhs):
        K, M = lhsT.shape
        _, N = rhs.shape
        out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
        stat = nl.ndarray((K // 128, nl.par_dim(128), M), dtype=lhsT.dtype)
        parts = nl.ndarray((N // 256, nl.par_dim(M), 256), dtype=nl.float32)
        for k in nl.affine_range(K // 128):
            stat[k] = nl.load(lhsT[k * 128:(k + 1) * 128, :])
        for n in nl.affine_range(N // 256):
            acc = nl.zeros((M, 256), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                acc += nisa.nc_matmul(stat[k], nl.load(rhs[k * 128:(k + 1) * 128, n * 256:(n + 1) * 256]))
            parts[n] = nl.copy(acc)
        total = nl.zeros((M, 256), dtype=nl.float32)
        for n in nl.sequential_range(N // 256):
            total[...] = nl.add(total, parts[n])
            nl.store(out[:, n * 256:(n + 1) * 256], value=parts[n])
        nl.store(out[:, 0:256], value=total)
        return out
    """
    runs = {}
    for workers in ("0", "2"):
        monkeypatch.setenv("NKI_SIM_WORKERS", workers)
        runs[workers], _ = run_source(body, "kernel", *operands)
    assert np.array_equal(runs["0"].outputs[0], runs["2"].outputs[0])
    assert runs["0"].trace == runs["2"].trace


def test_worker_threads_compute_with_the_simulations_numpy_error_state(monkeypatch, recwarn):
    """fp32 overflow is a value to trace (inf), not a numpy RuntimeWarning printed by a worker thread:
    numpy's error state is per thread, so the workers set the simulating thread's themselves."""
    monkeypatch.setenv("NKI_SIM_WORKERS", "2")
    huge = np.full((1024, 128), 3e38, np.float32)
    sim, _ = run_source("""
    def kernel(a):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(8):
            t = nl.load(a[k * 128:(k + 1) * 128, :])
            acc += nisa.nc_matmul(t, t)
        nl.store(out, value=nl.copy(acc))
        return out
    """, "kernel", huge)
    assert np.isinf(sim.outputs[0]).all()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_the_timeline_profiler_reports_every_part_and_leaves_the_simulator_as_it_was(capsys, monkeypatch):
    """benchmarks/profile_sim_timeline.py, small: the tool (e) is measured with keeps working, and its
    instrumentation is undone (a later simulation runs the real dispatch and job code)."""
    import benchmarks.profile_sim_timeline as profiler
    from evidence.nki import dispatch
    from evidence.nki import pipeline as pipeline_module
    from evidence.nki.ops.memory import PendingCopy
    from evidence.nki.product_batch import ProductBatch

    def hooks():
        return dispatch.call, pipeline_module.Job.run, ProductBatch.run, PendingCopy.run

    monkeypatch.setenv("NKI_SIM_WORKERS", "2")
    real = hooks()
    profiler.main(small=True, bins=3)
    out = capsys.readouterr().out
    assert "512x2048x1024: 384 instructions;" in out
    assert "nisa.nc_matmul" in out and "product batch (products, PSUM additions)" in out
    assert out.count(" ops ") == 3
    assert hooks() == real
