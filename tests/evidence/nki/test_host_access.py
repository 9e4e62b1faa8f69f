"""Host compute: a kernel reading tile values on the host, returning host data or mutating its inputs."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import SimulationError, load_kernel, simulate

from .conftest import kernel_source, marked_line

A = np.arange(128 * 64, dtype=np.float32).reshape(128, 64) / 100


def _host_findings(report):
    return [(f.code, f.line) for f in report.findings if f.code in ("host_compute", "input_mutation")]


def _fails_with_host_access(body: str):
    src = kernel_source(body)
    with pytest.raises(SimulationError) as info:
        simulate(load_kernel(src, display="k.py").kernel, A.copy())
    assert info.value.code == "err_host_access" and info.value.line == marked_line(src)
    assert ("host_compute", marked_line(src)) in _host_findings(info.value.report)


@pytest.mark.parametrize("read", ["np.asarray(t)", "np.array(t) + 1", "t.tolist()", "float(t)", "bytes(t)",
                                  "int(t)", "t.item()", "[1, 2][t]"])
def test_reading_a_tile_on_the_host_stops_the_run_at_its_line(read):
    _fails_with_host_access(f"""
        def kernel(a):
            t = nl.load(a)
            host = {read}  # <-
            return a
    """)


def test_a_kernel_that_swallows_the_refusal_keeps_the_finding():
    src = kernel_source("""
        def kernel(a):
            t = nl.load(a)
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            try:
                host = np.asarray(t)  # <-
            except Exception:
                pass
            nl.store(out, value=t)
            return out
    """)
    sim = simulate(load_kernel(src, display="k.py").kernel, A.copy())
    assert _host_findings(sim.report) == [("host_compute", marked_line(src))]
    np.testing.assert_array_equal(sim.outputs[0], A)


def test_host_array_operand_returned_host_array_and_constant_output_are_host_compute():
    src = kernel_source("""
        def kernel(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=np.full(a.shape, 2.0, np.float32))  # <-
            return out
    """)
    sim = simulate(load_kernel(src, display="k.py").kernel, A.copy())
    codes = _host_findings(sim.report)
    assert ("host_compute", marked_line(src)) in codes  # the host operand, at its line
    assert len(codes) == 2  # and outputs that never read the input: a constant, at the kernel's def
    src = kernel_source("""
        def kernel(a):  # <-
            return np.exp(a.data)
    """)
    sim = simulate(load_kernel(src, display="k.py").kernel, A.copy())
    assert ("host_compute", marked_line(src)) in _host_findings(sim.report)


def test_an_input_changed_by_host_code_is_input_mutation_and_instruction_writes_are_not():
    src = kernel_source("""
        def kernel(a, b):  # <-
            a.data[...] = 0
            out = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.load(b))
            return out
    """)
    sim = simulate(load_kernel(src, display="k.py").kernel, A.copy(), A.copy())
    assert _host_findings(sim.report) == [("input_mutation", marked_line(src))]
    # an old-style output argument written by a store is not a mutation, nor is a clean kernel
    src = kernel_source("""
        def kernel(a, c):
            t = nl.load(a)
            nl.store(c, value=nl.multiply(t, 2.0))
    """)
    sim = simulate(load_kernel(src, display="k.py").kernel, A.copy(), np.zeros_like(A))
    assert _host_findings(sim.report) == []
    np.testing.assert_allclose(sim.outputs[0], 2 * A)


def test_a_whole_input_loaded_and_changed_in_place_leaves_the_input_alone():
    src = kernel_source("""
        def kernel(a):
            t = nl.load(a)
            t[...] = nl.multiply(t, 0.0)
            back = nl.load(a)
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=back)
            return out
    """)
    a = A.copy()
    sim = simulate(load_kernel(src, display="k.py").kernel, a)
    np.testing.assert_array_equal(a, A)
    np.testing.assert_array_equal(sim.outputs[0], A)
    assert _host_findings(sim.report) == []


def test_input_digests_see_one_changed_byte_in_any_chunk_and_do_not_depend_on_threads(monkeypatch):
    from evidence.nki import host_access

    monkeypatch.setattr(host_access, "_CHUNK", 1024)  # a 4 KiB input in four chunks
    a = np.arange(1024, dtype=np.float32)
    before = host_access._digests({0: a}, None)
    assert host_access._digests({0: a}, lambda fns: [fn() for fn in reversed(fns)][::-1]) == before
    for at in (0, 1500, 4095):
        b = a.copy()
        b.view(np.uint8)[at] ^= 1
        assert host_access._digests({0: b}, None) != before
