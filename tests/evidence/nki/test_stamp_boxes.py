"""HBM write stamps kept as boxes (evidence/nki/stamp_boxes.py) instead of a per-element array.

The boxes are a shortcut, never a different answer: each kernel runs twice, once as it is and once
with boxes that never record anything (every write fills and uses the per-element stamps, the general
path), and outputs, written masks, findings, the report and the trace must be identical. The kernels
cover what the boxes must get right: the same tile stored again by another affine iteration, SPMD
instance or sequential iteration, partly overlapping stores, masked stores, many tiles, partly written
and never written outputs, and reads of an output back from HBM.
"""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import stamp_boxes, write_records
from evidence.nki.stamp_boxes import StampBoxes

from .conftest import run_source

RNG = np.random.default_rng(11)
A = RNG.standard_normal((256, 512)).astype(np.float32)


def B(*ranges):
    return tuple(r[0] for r in ranges), tuple(r[1] for r in ranges)


def test_boxes_answer_previous_writer_and_refuse_partial_overlaps():
    s = StampBoxes(np.zeros((8, 8), np.int32))
    assert s.record(B((0, 4), (0, 8)), 3) == -1
    assert s.record(B((0, 4), (0, 8)), 5) == 3  # the same box again: its last writer
    assert s.record(B((4, 8), (0, 4)), 6) == -1
    assert s.record(B((2, 6), (0, 8)), 7) is None  # partly overlaps both: the elements must answer
    assert s.volume == 48
    assert s.covers(B((1, 3), (2, 5))) and not s.covers(B((3, 5), (0, 2)))
    s.materialise()
    expected = np.full((8, 8), -1, np.int32)
    expected[0:4] = 5
    expected[4:8, 0:4] = 6
    assert (s.stamp == expected).all()


def test_many_boxes_are_scanned_with_numpy_alike():
    s = StampBoxes(np.zeros((4, 256), np.int32))
    for c in range(0, 256, 4):  # 64 column strips: past the Python scan
        assert s.record(B((0, 4), (c, c + 4)), c) == -1
    assert s.record(B((0, 4), (100, 101)), 1) is None  # inside strip 100: not apart from it
    assert s.record(B((0, 4), (128, 132)), 9) == 128
    assert s.volume == 4 * 256
    assert s.covers(B((1, 3), (249, 251))) and not s.covers(B((0, 4), (250, 254)))  # across two strips


KERNELS = {
    # tiles stored once each by affine iterations and SPMD instances; one read back from HBM
    "tiles": """
        def kernel(a):
            out = nl.ndarray((256, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            pid = nl.program_id(0)
            i_p = nl.arange(128)[:, None]
            for j in nl.affine_range(2):
                t = nl.load(a[pid * 128 + i_p, j * 256 + nl.arange(256)[None, :]])
                nl.store(out[pid * 128 + i_p, j * 256 + nl.arange(256)[None, :]], value=nl.exp(t))
            back = nl.load(out[pid * 128 + i_p, 256 + nl.arange(256)[None, :]])
            nl.store(out[pid * 128 + i_p, 256 + nl.arange(256)[None, :]], value=nl.add(back, 1.0))
            return out
    """,
    # two affine iterations store the same tile: an output dependency
    "same_tile_affine": """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            for j in nl.affine_range(2):
                nl.store(out[0:128, 0:512], value=nl.load(a[j * 128:(j + 1) * 128, 0:512]))
            return out
    """,
    # a sequential loop stores the same tile each step: legal
    "same_tile_sequential": """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            for j in nl.sequential_range(2):
                acc[...] = nl.add(acc, nl.load(a[j * 128:(j + 1) * 128, 0:512]))
                nl.store(out[0:128, 0:512], value=acc)
            return out
    """,
    # SPMD instances store the same tile of the shared output
    "same_tile_spmd": """
        def kernel(a):
            out = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.shared_hbm)
            pid = nl.program_id(0)
            nl.store(out[0:128, 0:256], value=nl.load(a[0:128, pid * 256:(pid + 1) * 256]))
            return out
    """,
    # affine iterations store tiles that overlap by half
    "overlap": """
        def kernel(a):
            out = nl.ndarray((256, 256), dtype=a.dtype, buffer=nl.shared_hbm)
            for j in nl.affine_range(3):
                nl.store(out[j * 64:j * 64 + 128, 0:256], value=nl.load(a[j * 64:j * 64 + 128, 0:256]))
            return out
    """,
    # a masked store between box stores; the output ends fully written
    "masked": """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(128)[:, None]
            i_f = nl.arange(512)[None, :]
            nl.store(out[0:128, 0:256], value=nl.load(a[0:128, 0:256]))
            nl.store(out[i_p, i_f], value=nl.load(a[128 + i_p, i_f]), mask=(i_p < 64))
            nl.store(out[64:128, 256:512], value=nl.load(a[0:64, 256:512]))
            return out
    """,
    # many narrow strips (numpy scan of the boxes), then stores across them that overlap each other
    "strips": """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            for j in nl.affine_range(40):
                nl.store(out[0:128, j * 8:j * 8 + 8], value=nl.load(a[0:128, j * 8:j * 8 + 8]))
            for k in nl.affine_range(2):
                nl.store(out[0:128, 300 + k * 8:400 + k * 8], value=nl.load(a[128:256, 0:100]))
            return out
    """,
    # half of one output written and its unwritten half read back into HBM, a second output never
    # written, a third half written and never read
    "partial": """
        def kernel(a):
            out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            never = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
            copy = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out[0:128, 0:256], value=nl.load(a[0:128, 0:256]))
            nl.store(copy, value=nl.load(out))
            part = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(part[0:64, 0:256], value=nl.load(a[0:64, 0:256]))
            return out, never, copy, part
    """,
}


def _run(name):
    grid = {"grid": (2,)} if name in ("tiles", "same_tile_spmd") else {}
    sim, _ = run_source(KERNELS[name], "kernel", A, **grid)
    return sim


def _general(monkeypatch):
    """Boxes that never record: every write and read takes the per-element stamps."""
    monkeypatch.setattr(stamp_boxes.StampBoxes, "record", lambda self, box, pid: None)


def _same(sim, ref):
    assert [o.tobytes() for o in sim.outputs] == [o.tobytes() for o in ref.outputs]
    assert [None if w is None else w.tobytes() for w in sim.written] == \
        [None if w is None else w.tobytes() for w in ref.written]
    assert sim.report.model_dump() == ref.report.model_dump()
    assert sim.recorder.events == ref.recorder.events


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_stamp_boxes_change_nothing(name, monkeypatch):
    sim = _run(name)
    _general(monkeypatch)
    _same(sim, _run(name))


def _codes(sim):
    return sorted(f.code for f in sim.report.findings)


def test_what_the_boxes_answer():
    assert "err_unexpected_output_dependencies" in _codes(_run("same_tile_affine"))
    assert "err_unexpected_output_dependencies" in _codes(_run("same_tile_spmd"))
    assert "err_unexpected_output_dependencies" in _codes(_run("overlap"))
    assert "err_unexpected_output_dependencies" in _codes(_run("strips"))
    assert "err_unexpected_output_dependencies" not in _codes(_run("same_tile_sequential"))
    assert "err_unexpected_output_dependencies" not in _codes(_run("tiles"))
    sim = _run("partial")
    codes = _codes(sim)
    assert {"output_not_fully_written", "err_tensor_output_not_written_to", "uninitialized_read"} <= set(codes)
    assert sim.written[0][:, :256].all() and not sim.written[0][:, 256:].any()
    assert not sim.written[1].any() and sim.written[2] is None
    assert sim.written[3][:64].all() and not sim.written[3][64:].any()


def test_box_stores_never_fill_the_stamp_array(monkeypatch):
    filled = []
    real = write_records.materialise_stamps
    monkeypatch.setattr(write_records, "materialise_stamps", lambda alloc: (filled.append(alloc.stamp_boxes), real(alloc)))
    sim = _run("tiles")
    assert [b for b in filled if b is not None] == []
    np.testing.assert_allclose(sim.outputs[0][:, 256:], np.exp(A[:, 256:]) + 1.0, rtol=1e-6)
    assert sim.written == (None,)
    _run("overlap")
    assert [b for b in filled if b is not None]  # a partly overlapping store needs the elements
