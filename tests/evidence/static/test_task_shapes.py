"""The task contract the ragged-tail rule reads: which input dimensions a description lets take any size."""

from __future__ import annotations

import pytest

from evidence.static.collectors import NkiStaticCollector
from evidence.static.task_shapes import any_size_dims
from evidence.submission import Manifest, Submission

X = [("x", (384, 1024)), ("gamma", (1024,))]


@pytest.mark.parametrize("description, dims", [
    ("y = x * g for x [rows, cols] and gamma [cols] in bf16; rows is any positive integer, cols <= 8192", (("x", 0),)),
    ("softmax of x [rows, cols] in fp16; rows any positive integer, cols a power of two", (("x", 0),)),
    ("out = x + y for x, y [rows, cols] fp32; rows is any positive integer", (("x", 0), ("y", 0))),
    ("y = x * g for x [rows, cols] and gamma [cols]; rows a multiple of 128, cols <= 8192", ()),
    ("C = lhsT.T @ rhs for lhsT [K, M]; K and M multiples of 128, N any size", ()),  # N names no input axis
    ("softmax over the last axis of a [rows, cols] tensor", ()),  # no statement: unknown, not "any"
    ("", ()),
])
def test_only_explicit_any_size_statements_about_named_axes_count(description, dims):
    inputs = X + [("y", (384, 1024))] if ", y [" in description else X
    assert any_size_dims(description, inputs) == dims


KERNEL = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
{guard}    for t in nl.affine_range(rows // 128):
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.load(x[t * 128:(t + 1) * 128, :]))
    return out
"""


def _findings(description: str, guard: str = "") -> list:
    manifest = Manifest.model_validate({
        "task": {"id": "t", "title": "t", "description": description},
        "kernel": {"file": "kernel.py", "entry": "kernel"},
        "inputs": [{"name": "x", "shape": [384, 256], "dtype": "float32"}]})
    sub = Submission(manifest=manifest, files={"kernel.py": KERNEL.format(guard=guard)})
    return [i for i in NkiStaticCollector().collect(sub) if i.kind == "nki.ragged-without-mask"]


def test_a_floor_over_a_dimension_the_task_lets_take_any_size_is_flagged_at_the_loop():
    # calibration item rmsnorm-no-ragged-mask: 384 rows pass, any other row count loses its tail
    found = _findings("copy x [rows, cols]; rows is any positive integer")
    assert [(f.location.start_line, f.labels["pattern"]) for f in found] == [(9, "unguarded_floor")]
    assert "384 // 128 = 3 tiles" in found[0].title


@pytest.mark.parametrize("description, guard", [
    ("copy x [rows, cols]; rows a multiple of 128", ""),
    ("copy x [rows, cols]", ""),
    ("copy x [rows, cols]; rows is any positive integer", "    assert rows % 128 == 0, 'whole tiles only'\n"),
])
def test_no_finding_when_the_task_or_the_kernel_guarantees_whole_tiles(description, guard):
    assert _findings(description, guard) == []
