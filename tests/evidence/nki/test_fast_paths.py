"""Shortcuts on the simulating thread (evidence/nki/tensor.py, subscripts.py) never change an answer.

Each kernel here runs as it is and again with a shortcut switched off, and outputs, the report, the
trace and the scheduler's side tables must be identical:

- `t[k] += x` makes Python store `t[k] = t[k]`; `assigns_itself` recognises that store from the key
  object and the very view `t[k]` returned, and skips indexing and the assign dispatch;
- compiler-style subscripts (`affine_view`) return the view cut before for a repeated subscript
  (views never change), and remember a view known to be wholly written.

Switching `affine_view` off sends every subscript through the general path (and so disables the
self-assignment shortcut, which only trusts fast-path views).
"""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import dispatch, subscripts, tensor

from .conftest import marked_line, run_source

RNG = np.random.default_rng(11)
A = RNG.standard_normal((256, 128)).astype(np.float32)
B = RNG.standard_normal((256, 512)).astype(np.float32)

KERNELS = {
    # PSUM accumulation groups with `+=`, copied out into a block tensor and summed there with `+=`
    "psum_groups": """
        def kernel(a, b):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            parts = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            for n in nl.affine_range(2):
                acc = nl.zeros((nl.par_dim(128), 256), dtype=nl.float32, buffer=nl.psum, lazy_initialization=True)
                for k in nl.affine_range(2):
                    at = nl.load(a[k * 128 + i_p, nl.arange(128)[None, :]])
                    bt = nl.load(b[k * 128 + i_p, n * 256 + nl.arange(256)[None, :]])
                    acc[i_p, nl.arange(256)[None, :]] += nisa.nc_matmul(at, bt)
                parts[0, i_p, n * 256 + nl.arange(256)[None, :]] = nl.copy(acc[i_p, nl.arange(256)[None, :]])
            total = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            for r in nl.sequential_range(3):
                total[i_p, nl.arange(512)[None, :]] += nl.multiply(parts[0, i_p, nl.arange(512)[None, :]], 0.5)
            nl.store(out[i_p, nl.arange(512)[None, :]], value=total[i_p, nl.arange(512)[None, :]])
            return out
    """,
    # stores that look like self-assignments and are not: another key object for the same region, another
    # region, an older view; and one that is (the same key object and view, written out by hand)
    "lookalikes": """
        def kernel(b):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            t = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            t[i_p, nl.arange(512)[None, :]] = nl.load(b[i_p, nl.arange(512)[None, :]])
            left = (i_p, nl.arange(256)[None, :])
            right = (i_p, 256 + nl.arange(256)[None, :])
            t[left] = t[left]
            old = t[right]
            t[right] += nl.exp(t[left])
            t[left] = t[right]
            t[right] = old
            t[(i_p, 256 + nl.arange(256)[None, :])] = t[right]
            u = t[left]
            u += 1.0
            t[left] = u
            s = nl.zeros((nl.par_dim(128), 256), dtype=nl.float32, buffer=nl.sbuf)
            sv = s[i_p, nl.arange(256)[None, :]]
            y = t[left]
            t[left] = sv
            nl.store(out[i_p, nl.arange(512)[None, :]], value=t[i_p, nl.arange(512)[None, :]])
            return out
    """,
    # `+=` into an output argument in HBM and into a never-written tile (an undefined read that reaches HBM)
    "hbm_and_undefined": """
        def kernel(b, res):
            i_p = nl.arange(128)[:, None]
            x = nl.load(b[i_p, nl.arange(512)[None, :]])
            res[i_p, nl.arange(512)[None, :]] += x
            junk = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            junk[i_p, nl.arange(512)[None, :]] += x
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out[i_p, nl.arange(512)[None, :]], value=junk[i_p, nl.arange(512)[None, :]])
            return out
    """,
    # slice subscripts repeated on block tiles (kept views), a tile partly written between two reads of the
    # same slice, a slice starting at partition 64, and one affine `+=` (the self-assignment shortcut)
    "slices": """
        def kernel(a, b):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            stat = nl.ndarray((2, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.sbuf)
            movs = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            for k in nl.affine_range(2):
                stat[k] = nl.load(a[k * 128:(k + 1) * 128, :])
            movs[0] = nl.load(b[0:128, :])
            for n in nl.affine_range(2):
                acc = nl.zeros((128, 256), dtype=nl.float32, buffer=nl.psum)
                acc += nisa.nc_matmul(stat[0], movs[0, :, n * 256:(n + 1) * 256])
                movs[1, :, n * 256:(n + 1) * 256] = nl.load(b[128:256, n * 256:(n + 1) * 256])
                acc += nisa.nc_matmul(stat[1], movs[1, :, n * 256:(n + 1) * 256])
                res = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.sbuf)
                res[...] = nl.copy(acc)
                i_p = nl.arange(128)[:, None]
                res[i_p, nl.arange(256)[None, :]] += nl.exp(movs[0, :, 0:256])
                half = nl.multiply(res[64:128, :], 2.0)
                res[64:128, :] = half
                res[0:64, :] = nl.add(res[0:64, :], res[0:128, :][0:64, :])
                nl.store(out[:, n * 256:(n + 1) * 256], value=res[:, :])
            return out
    """,
}


def _run(name: str):
    args = {"psum_groups": (A, B), "lookalikes": (B,), "hbm_and_undefined": (B, np.ones((128, 512), np.float32)),
            "slices": (A, B)}[name]
    sim, _ = run_source(KERNELS[name], "kernel", *args)
    return sim


def _observables(sim) -> tuple:
    rec = sim.recorder
    return ([o.tobytes() for o in sim.outputs], sim.report.model_dump(), rec.events, rec.forwards, rec.allocs,
            rec.frees, rec.marks, rec.chains.longest)


def _counted_self_assignments(monkeypatch) -> list:
    fired = []
    real = dispatch.self_assignment

    def spy(view):
        done = real(view)
        fired.append(done)
        return done

    monkeypatch.setattr(dispatch, "self_assignment", spy)
    return fired


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_self_assignment_shortcut_changes_nothing(name, monkeypatch):
    fired = _counted_self_assignments(monkeypatch)
    sim = _run(name)
    assert any(fired), "the kernel never took the shortcut: the comparison would prove nothing"
    monkeypatch.setattr(tensor, "assigns_itself", lambda t, key, value: False)
    assert _observables(sim) == _observables(_run(name))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kept_views_change_nothing(name, monkeypatch):
    sim = _run(name)
    monkeypatch.setattr(subscripts, "affine_view", lambda t, key: None)  # every subscript takes the general path
    assert _observables(sim) == _observables(_run(name))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_kept_slice_views_change_nothing(name, monkeypatch):
    sim = _run(name)
    monkeypatch.setattr(subscripts, "_basic_key", lambda key: None)  # slice subscripts cut a new view each time
    assert _observables(sim) == _observables(_run(name))


def test_a_repeated_slice_subscript_is_the_same_view():
    sim, _ = run_source("""
        def kernel(b):
            t = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            first, again, other = t[1, :, 64:320], t[1, :, 64:320], t[0, :, 64:320]
            shorter, stepped = t[1, :, 64:128], t[1, :, 64:320:2]
            assert again is first and other is not first and first.block == (1,)
            assert shorter.shape == (128, 64) and stepped.shape == (128, 128) and shorter is not first
            t[1] = nl.load(b[0:128, :])
            out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out, value=t[1, :, 64:320])
            return out
    """, "kernel", B)
    assert np.array_equal(sim.outputs[0], B[:128, 64:320])


def test_a_repeated_subscript_is_the_same_view_until_the_tensor_changes():
    sim, _ = run_source("""
        def kernel(b):
            t = nl.ndarray((2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            i_p = nl.arange(128)[:, None]
            first = t[1, i_p, 64 + nl.arange(256)[None, :]]
            again = t[1, i_p, 64 + nl.arange(256)[None, :]]
            other = t[0, i_p, 64 + nl.arange(256)[None, :]]
            assert again is first and other is not first and other.block == (0,) and first.block == (1,)
            t[1, i_p, nl.arange(512)[None, :]] = nl.load(b[i_p, nl.arange(512)[None, :]])
            assert not other.written and t[1, i_p, 64 + nl.arange(256)[None, :]]._covered()
            out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out[i_p, nl.arange(256)[None, :]], value=first)
            return out
    """, "kernel", B)
    assert np.array_equal(sim.outputs[0], B[:128, 64:320])


def test_a_kept_view_read_again_before_it_is_written_is_still_undefined():
    """A view's 'wholly written' memo is only ever a yes: the second read of a never-written tile is an
    undefined read reaching HBM, as the first would be."""
    sim, src = run_source("""
        def kernel(b):
            i_p = nl.arange(128)[:, None]
            t = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            t[i_p, nl.arange(256)[None, :]] = nl.load(b[i_p, nl.arange(256)[None, :]])
            first = nl.exp(t[i_p, nl.arange(512)[None, :]])
            again = nl.exp(t[i_p, nl.arange(512)[None, :]])  # <-
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out[i_p, nl.arange(512)[None, :]], value=again)
            return out
    """, "kernel", B)
    assert np.isnan(sim.outputs[0][:, 256:]).all() and not np.isnan(sim.outputs[0][:, :256]).any()
    assert [(f.code, f.line) for f in sim.report.findings if f.code == "uninitialized_read"] == [
        ("uninitialized_read", marked_line(src))]
