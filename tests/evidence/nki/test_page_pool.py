"""Lazily mapped arrays of a simulation (evidence.nki.page_pool): reused only when nothing uses them, and
then indistinguishable from fresh zero pages."""

from __future__ import annotations

import sys

import numpy as np

from evidence.nki.page_pool import LAZY_BYTES, PagePool

SHAPE = (64, 128, 1024)  # 32 MiB of fp32


def test_a_mapping_in_use_is_never_handed_out_again():
    pool = PagePool()
    a = pool.zeros(SHAPE, np.float32)
    view = a[3:5, ::2].T  # a view alone keeps the memory in use
    del a
    b = pool.zeros(SHAPE, np.float32)
    assert not np.shares_memory(b, view)
    assert len(pool.maps) == 2


def test_a_reused_mapping_reads_as_zeros_whatever_the_last_use_wrote():
    pool = PagePool()
    for k in range(4):
        a = pool.zeros(SHAPE, np.float32)
        assert not a.any(), f"use {k} sees data of an earlier use"
        a[k * 8:(k + 1) * 8] += 1.0  # each use writes other blocks ...
        a[32:64] += 2.0  # ... and the same ones
        assert a.max() == 2.0
        del a
    assert len(pool.maps) == 1


def test_a_mapping_written_whole_is_zeroed_in_place_unless_its_next_use_never_reads_unwritten_elements():
    pool = PagePool()
    for unread, left in ((False, 0.0), (True, 3.0)):
        b = None  # one mapping throughout
        a = pool.zeros(SHAPE, np.float32)
        a[...] = 3.0
        pool.mark_dense(a)
        address = a.__array_interface__["data"][0]
        del a
        b = pool.zeros(SHAPE, np.float32, unread=unread)  # unread: not zeroed, no 32 MiB pass
        assert b.__array_interface__["data"][0] == address and (b == left).all()
    b[:8] = 1.0  # a use that writes a part only: dropped, reads as zeros for any use after
    del b
    c = pool.zeros(SHAPE, np.float32, unread=True)
    assert not c.any()
    c[...] = 5.0
    pool.mark_dense(c)
    del c
    assert not pool.zeros(SHAPE, np.float32).any()  # a written-element mask, say: zeroed in place
    assert len(pool.maps) == 1


def test_small_arrays_are_plain_zeros():
    pool = PagePool()
    small = pool.zeros((LAZY_BYTES // 8,), np.float32)
    assert not small.any() and not pool.maps


def test_malloc_settings_hold_for_nested_runs_and_end_with_the_last():
    from evidence.nki import malloc

    with malloc.reuse_freed_memory():
        with malloc.reuse_freed_memory():
            assert malloc._held.users == 2
        assert malloc._held.users == 1  # the outer run keeps its settings
    assert malloc._held.users == 0


MONITORED = r'''
import json, os, sys
import numpy as np
from evidence.nki import load_kernel, simulate
from evidence.sandbox.monitor import Monitor

src, events = sys.argv[1], sys.argv[2]
fd = os.open(events, os.O_WRONLY | os.O_CREAT)
monitor = Monitor(src, fd, block=True, read_roots=[sys.base_prefix, sys.prefix, os.getcwd(), src], write_roots=[],
                  withheld=())
kernel = load_kernel(os.path.join(src, "kernel.py")).kernel
sys.addaudithook(monitor.hook)
sim = simulate(kernel, np.ones((128, 2048), np.float32), grid=(3,))
print(json.dumps(float(np.nansum(sim.outputs[0]))))
'''

KERNEL = '''
import neuronxcc.nki.language as nl


def kernel(a):
    i = nl.program_id(0)
    out = nl.ndarray((3, 128, 2048), dtype=nl.float32, buffer=nl.shared_hbm)
    whole = nl.ndarray((2, nl.par_dim(128), 8192), dtype=nl.float32)  # written whole: zeroed in place
    part = nl.ndarray((4, nl.par_dim(128), 8192), dtype=nl.float32)  # a block per instance: dropped
    for k in nl.affine_range(8):
        whole[0, :, k * 1024:(k + 1) * 1024] = nl.load(a[:, 0:1024])
        whole[1, :, k * 1024:(k + 1) * 1024] = nl.load(a[:, 0:1024])
    part[i, :, 0:2048] = nl.add(whole[1, :, 0:2048], nl.load(a))
    nl.store(out[i], value=part[i, :, 0:2048])
    return out
'''


def test_reusing_memory_under_the_sandbox_monitor_reports_nothing(tmp_path):
    """The monitor reports ctypes calls made while submitted code is on the stack as an escape (and blocks
    them under the import policy): the simulator's memory reuse must make none."""
    import subprocess
    from pathlib import Path

    src = tmp_path / "src"
    src.mkdir()
    (src / "kernel.py").write_text(KERNEL)
    events = tmp_path / "events.jsonl"
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", MONITORED, str(src), str(events)], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout.strip()) == 3 * 128 * 2048 * 2.0
    assert not events.exists() or events.read_text() == ""


def test_an_spmd_instance_reading_what_it_did_not_write_of_a_tensor_the_last_one_wrote_whole_sees_nan(monkeypatch):
    """The kernel's big tensor is written whole by instance 0 and handed to instance 1 unzeroed; instance 1
    writes half of it and reads all of it: the other half is never written for instance 1 (NaN, an
    undefined read), exactly as with fresh zero pages (a pool that never maps lazily)."""
    from evidence.nki import page_pool

    from .conftest import run_source

    body = """
        def kernel(a):
            i = nl.program_id(0)
            out = nl.ndarray((2, 128, 8192), dtype=nl.float32, buffer=nl.shared_hbm)
            big = nl.ndarray((4, nl.par_dim(128), 2048), dtype=nl.float32)  # 4 MiB: lazily mapped
            for j in nl.affine_range(4):
                if i == 0 or j < 2:
                    big[j] = nl.load(a[:, j * 2048:(j + 1) * 2048])
            for j in nl.affine_range(4):
                nl.store(out[i, :, j * 2048:(j + 1) * 2048], value=nl.multiply(big[j], 2.0))
            return out
    """
    a = np.arange(128 * 8192, dtype=np.float32).reshape(128, 8192)
    unzeroed = []
    clear = page_pool._Mapping.clear
    monkeypatch.setattr(page_pool._Mapping, "clear",
                        lambda self, unread=False: (unzeroed.append(self.dense and unread), clear(self, unread))[1])
    sim, _ = run_source(body, "kernel", a, grid=(2,))
    assert True in unzeroed  # instance 1 got instance 0's data mapping as it was
    monkeypatch.setattr(page_pool, "LAZY_BYTES", 1 << 40)
    fresh, _ = run_source(body, "kernel", a, grid=(2,))
    assert sim.outputs[0].tobytes() == fresh.outputs[0].tobytes()
    assert sim.report.model_dump() == fresh.report.model_dump()
    np.testing.assert_array_equal(sim.outputs[0][0], 2 * a)
    assert np.isnan(sim.outputs[0][1, :, 4096:]).all() and (sim.outputs[0][1, :, :4096] == 2 * a[:, :4096]).all()
    assert "uninitialized_read" in {f.code for f in sim.report.findings}
