"""A beta kernel calling an `nl.*` name no documented NKI release has is judged as the import of one is: the
static finding names the call's line, the simulation stops there as the kernel's error (`sim.error`, not
`sim.incomplete`), neuron_platform is capped at 1, correctness at 1, and the criteria the run did not reach are
judged on the source alone. A documented op the simulator lacks stays `sim.incomplete` with no such finding.

Every kernel here is written for these tests (rows times two, 128 x 512 fp32)."""

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
distribution = "normal"

[reference]
file = "reference.py"
entry = "scale_rows_ref"
"""
KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.jit
def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    y = CALL
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
'''


def _bundle(tmp_path: Path, call: str):
    (tmp_path / "submission.toml").write_text(MANIFEST)
    (tmp_path / "reference.py").write_text("def scale_rows_ref(x):\n    return x * 2.0\n")
    (tmp_path / "kernel.py").write_text(KERNEL.replace("CALL", call))
    sub = load_submission(tmp_path)
    return sub, gather(sub, exclude=("perf", "numerics"))


def test_a_call_no_release_documents_is_a_kernel_error_capped_like_the_import_of_one(tmp_path):
    sub, bundle = _bundle(tmp_path, "nl.fast_exp(t)")
    (finding,) = bundle.of_kind("nki.undocumented-nki-api")
    (stop,) = bundle.of_kind("sim.error")
    assert not bundle.of_kind("sim.incomplete")
    assert (finding.location.start_line, finding.labels["api"]) == (10, "nl.fast_exp")
    assert (stop.labels["code"], stop.location.start_line) == ("undocumented_api", 10)
    d = RulesDrafter().draft(sub, bundle, load_rubric())
    assert d.criterion("neuron_platform").score == 1 and d.criterion("kernel_correctness").score == 1
    tiling = d.criterion("tiling")
    assert "unobserved" in {f.code for f in tiling.flags} and "kernel.py:10" in tiling.rationale


def test_a_documented_op_the_simulator_lacks_stays_incomplete_without_a_finding(tmp_path):
    _, bundle = _bundle(tmp_path, "nisa.quantize_mx(t)")
    assert not bundle.of_kind("nki.undocumented-nki-api", "sim.error")
    (limit,) = bundle.of_kind("sim.incomplete")
    assert limit.labels["code"] == "unsupported_op" and limit.location.start_line == 10
