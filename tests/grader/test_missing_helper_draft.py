"""A kernel importing a helper its submission does not include is judged as a kernel that does not load (correctness
1, cited at the import), not left unscored as if the grader lacked a package; a package no file of the submission
names stays the grader's limit (unscored with the reason). Kernels written for these tests (rows times two)."""

from __future__ import annotations

from pathlib import Path

from tests.grader.scale_rows import drafted, gathered, write

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
    sub, bundle = gathered(write(tmp_path, KERNEL.replace("IMPORT", line)))
    return bundle, drafted(sub, bundle)


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
