"""Written and loaded regions as boxes (evidence/nki/coverage.py) beside the wmask/lmask bookkeeping.

The boxes are a shortcut, never a different answer: every kernel here runs twice, once as it is and
once with boxes that know nothing (every question falls back to the masks), and outputs, findings
and the report must be identical. The kernels cover what the boxes must get right: tiles written in
halves and read whole, partial overlaps, reads of partly written regions reaching HBM, masked and
gathered writes mixed with box writes, basic slices, SPMD instances and lazily mapped block tensors.
"""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import coverage
from evidence.nki.coverage import Coverage

from .conftest import run_source

RNG = np.random.default_rng(5)
A = RNG.standard_normal((256, 512)).astype(np.float32)


# --- the boxes themselves ------------------------------------------------------------------------

def B(*ranges):
    """A box from per-axis (lo, hi) ranges."""
    return tuple(r[0] for r in ranges), tuple(r[1] for r in ranges)


def test_disjoint_boxes_count_their_volume_and_contained_ones_nothing():
    mask = np.zeros((2, 8, 8), bool)
    cov = Coverage(1, mask)
    assert cov.count(B((0, 1), (0, 8), (0, 4))) == 32
    cov.record(B((0, 1), (0, 8), (0, 4)))
    assert mask.sum() == 32  # painted at once unless lazy
    assert cov.count(B((0, 1), (0, 4), (0, 2))) == 0
    assert cov.count(B((1, 2), (0, 8), (0, 4))) == 32  # another block
    assert cov.count(B((0, 1), (0, 8), (2, 6))) is None  # partial overlap: the mask must count


def test_halves_merge_into_the_whole_block():
    cov = Coverage(1, np.zeros((2, 8, 8), bool))
    cov.record(B((1, 2), (0, 8), (4, 8)))
    assert not cov.covers(B((1, 2), (0, 8), (0, 8)))
    cov.record(B((1, 2), (0, 8), (0, 4)))
    assert cov.covers(B((1, 2), (0, 8), (0, 8)))
    assert not cov.covers(B((0, 1), (0, 8), (0, 8)))
    assert cov.blocks[(1,)] == [B((1, 2), (0, 8), (0, 8))]


def test_irregular_write_paints_deferred_boxes_and_stops_counting():
    mask = np.zeros((4, 4), bool)
    cov = Coverage(0, mask, lazy=True)
    cov.record(B((0, 2), (0, 4)))
    assert not mask.any()  # deferred
    cov.irregular()
    assert mask[:2].all() and not mask[2:].any()
    assert cov.count(B((2, 4), (0, 4))) is None  # the mask may hold elements the boxes do not name
    assert cov.count(B((0, 1), (0, 4))) == 0  # what the boxes name is still covered


def test_any_answers_from_the_boxes_without_painting():
    mask = np.zeros((4, 4), bool)
    assert not Coverage(0, np.zeros((4, 4), bool), lazy=True).any()
    cov = Coverage(0, mask, lazy=True)
    cov.record(B((1, 2), (0, 4)))
    assert cov.any() and not mask.any()  # deferred boxes stay unpainted
    other = Coverage(0, np.zeros((4, 4), bool), lazy=True)
    other.irregular()
    other.mask[3, 3] = True  # written through the mask only (a gathered access)
    assert other.any()


def test_too_many_boxes_fall_back_to_the_mask():
    mask = np.zeros((64, 64), bool)
    cov = Coverage(0, mask, lazy=True)
    for i in range(0, 64, 2):  # every other row: nothing merges
        cov.record(B((i, i + 1), (0, 64)))
    assert not cov.exact and cov.painted
    assert int(mask.sum()) == 32 * 64


# --- same behaviour with and without the boxes ------------------------------------------------------

KERNELS = {
    # a block tensor written in halves, read whole and in quarters; one block never written is read into HBM
    "halves": """
        def kernel(a):
            out = nl.ndarray((256, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            buf = nl.ndarray((3, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            for b in nl.affine_range(2):
                for h in nl.affine_range(2):
                    buf[b, nl.arange(128)[:, None], h * 256 + nl.arange(256)[None, :]] = nl.load(
                        a[b * 128 + nl.arange(128)[:, None], h * 256 + nl.arange(256)[None, :]])
            x = nl.add(buf[0], buf[1, nl.arange(128)[:, None], nl.arange(512)[None, :]])
            y = nl.exp(buf[2, nl.arange(128)[:, None], 128 + nl.arange(128)[None, :]])
            nl.store(out[0:128, :], value=x)
            nl.store(out[128:256, 0:128], value=y)
            return out
    """,
    # overlapping writes (partial overlaps), then a read that is only partly defined
    "overlaps": """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            buf = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            buf[:, 0:200] = nl.load(a[0:128, 0:200])
            buf[:, 100:300] = nl.load(a[0:128, 100:300])
            buf[0:64, 250:400] = nl.load(a[0:64, 250:400])
            nl.store(out, value=nl.multiply(buf, 2.0))
            return out
    """,
    # a masked write, then box writes and reads around it
    "masked": """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            buf = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(256)[None, :]
            buf[i_p, i_f] = nl.load(a[i_p, i_f], mask=(i_p < 100))
            buf[i_p, 256 + i_f] = nl.load(a[i_p, 256 + i_f])
            nl.store(out[i_p, 256 + i_f], value=buf[i_p, 256 + i_f])
            nl.store(out[i_p, i_f], value=buf[i_p, i_f])
            return out
    """,
    # a gathered (index-tile) write into a tracked tensor, then box reads
    "gathered": """
        def kernel(a, idx):
            out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
            buf = nl.ndarray((nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
            buf[:, 0:32] = nl.load(a[0:128, 0:32])
            cols = nl.load(idx)
            i_p = nl.arange(128)[:, None]
            buf[i_p, cols] = nl.load(a[0:128, 100:102])
            nl.store(out, value=buf)
            return out
    """,
    # SPMD: each instance writes its own block of a lazily mapped (4 MiB+) block tensor, reads repeatedly
    "spmd_lazy": """
        def kernel(a):
            out = nl.ndarray((256, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            pid = nl.program_id(0)
            big = nl.ndarray((4, 2, nl.par_dim(128), 1024), dtype=nl.float32, buffer=nl.sbuf)
            i_p = nl.arange(128)[:, None]
            for j in nl.affine_range(2):
                big[pid, j, i_p, nl.arange(512)[None, :]] = nl.load(a[j * 128 + i_p, nl.arange(512)[None, :]])
            acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            for j in nl.sequential_range(2):
                acc[i_p, nl.arange(512)[None, :]] = nl.add(acc, big[pid, j, i_p, nl.arange(512)[None, :]])
            nl.store(out[pid * 128 + i_p, nl.arange(512)[None, :]],
                     value=nl.add(acc, big[pid, 0, i_p, 256 + nl.arange(512)[None, :]]))
            return out
    """,
    # redundant loads: the same tile twice, overlapping tiles, a masked load
    "loads": """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            x = nl.load(a[0:128, 0:256])
            y = nl.load(a[0:128, 0:256])
            z = nl.load(a[0:128, 128:384])
            i_p = nl.arange(128)[:, None]
            w = nl.load(a[i_p, 256 + nl.arange(256)[None, :]], mask=(i_p < 64))
            nl.store(out[0:128, 0:256], value=nl.add(x, y))
            nl.store(out[0:128, 256:512], value=nl.add(z, w))
            return out
    """,
}


def _blind(monkeypatch):
    monkeypatch.setattr(coverage.Coverage, "covers", lambda self, box: False)
    monkeypatch.setattr(coverage.Coverage, "count", lambda self, box: None)


def _run(name):
    args = (A, np.array([[40, 50]] * 128, np.int32)) if name == "gathered" else (A,)
    grid = {"grid": (2,)} if name == "spmd_lazy" else {}
    sim, _ = run_source(KERNELS[name], "kernel", *args, **grid)
    return sim


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_boxes_change_nothing(name, monkeypatch):
    sim = _run(name)
    _blind(monkeypatch)
    ref = _run(name)
    assert [o.tobytes() for o in sim.outputs] == [o.tobytes() for o in ref.outputs]
    assert sim.report.model_dump() == ref.report.model_dump()
    assert [e for e in sim.recorder.events] == [e for e in ref.recorder.events]


def test_partly_written_read_reaching_hbm_is_still_found():
    """Reading a block written only in part (the boxes cover the half, not the tile) is an undefined read."""
    sim = _run("halves")
    codes = {f.code for f in sim.report.findings}
    assert "uninitialized_read" in codes
    assert np.isnan(sim.outputs[0][128:256, 0:128]).all()  # buf[2] was never written
    np.testing.assert_allclose(sim.outputs[0][0:128], A[0:128] + A[128:256], rtol=1e-6)


def test_redundant_load_bytes_counted_from_boxes():
    sim = _run("loads")
    # y repeats x (128 x 256), z overlaps x on 128 x 128, the masked load w (64 rows) overlaps z on 64 x 128
    assert sim.report.redundant_hbm_read_bytes == (128 * 256 + 128 * 128 + 64 * 128) * 4
