"""A kernel importing a helper its submission does not include is judged as a kernel that does not load (correctness
1, cited at the import), not left unscored as if the grader lacked a package; a package no file of the submission
names stays the grader's limit (unscored with the reason). Kernels written for these tests (rows times two)."""

from __future__ import annotations

from pathlib import Path

from evidence.gather import gather
from grader.drafting.rules import RulesDrafter
from grader.rubric import load_rubric
from grader.submission import load_submission

MANIFEST = """[task]
id = "scale-rows"
title = "Rows times two"
description = "out = 2 x for x [128, 512] fp32"
target = "trn2"

[kernel]
file = "kernel.py"
entry = "scale_rows"

[[inputs]]
name = "x"
shape = [128, 512]
dtype = "float32"

[reference]
file = "reference.py"
entry = "scale_rows_ref"
"""
KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
IMPORT


@nki.jit
def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
'''


def _draft(tmp_path: Path, line: str):
    (tmp_path / "submission.toml").write_text(MANIFEST)
    (tmp_path / "reference.py").write_text("def scale_rows_ref(x):\n    return x * 2.0\n")
    (tmp_path / "kernel.py").write_text(KERNEL.replace("IMPORT", line))
    sub = load_submission(tmp_path)
    bundle = gather(sub, exclude=("perf", "numerics"))
    return bundle, RulesDrafter().draft(sub, bundle, load_rubric())


def test_a_missing_own_helper_fails_correctness_at_the_import(tmp_path):
    bundle, d = _draft(tmp_path, "from .row_helpers import double_rows")
    (stop,) = bundle.of_kind("sim.error")
    assert (stop.labels["code"], stop.location.start_line) == ("submission_import_error", 3)
    assert not bundle.of_kind("sim.incomplete")
    correctness = d.criterion("kernel_correctness")
    assert correctness.score == 1 and "does not include" in correctness.rationale
    assert (stop.id, "kernel.py", 3) in {(c.evidence_id, c.file, c.start_line) for c in correctness.citations}


def test_a_package_the_sandbox_lacks_leaves_correctness_unscored(tmp_path):
    bundle, d = _draft(tmp_path, "import acme_vendor_kernels_sdk")
    (limit,) = bundle.of_kind("sim.incomplete")
    assert limit.labels["code"] == "import_error" and not bundle.of_kind("sim.error")
    assert d.criterion("kernel_correctness").status == "unscored"
