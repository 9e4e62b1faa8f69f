"""A criterion the simulation never observed is not drafted as if it had been: when the kernel did not import
(APIs no documented NKI release has) or the simulation stopped at its first allocation, the scores read from
the source say so, cite why with file:line and carry an `unobserved` flag (and their own confidence state);
APIs no release has cap neuron_platform at 1. A kernel that ran to the end is not marked.

Every kernel here is written for these tests (rows times two, 256 x 512 fp32)."""

from __future__ import annotations

from pathlib import Path

from evidence.gather import gather
from grader.submission import load_submission
from grader.drafting.rules import RulesDrafter, criterion_state
from grader.rubric import load_rubric

MANIFEST = """[task]
id = "scale-rows"
title = "Rows times two"
description = "out = 2 x for x [256, 512] fp32"
target = "trn2"

[kernel]
file = "kernel.py"
entry = "scale_rows"

[[inputs]]
name = "x"
shape = [256, 512]
dtype = "float32"
distribution = "normal"

[reference]
file = "reference.py"
entry = "scale_rows_ref"
"""
REFERENCE = "def scale_rows_ref(x):\n    return x * 2.0\n"
HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
BODY = '''

@nki.jit
def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    rows = {rows}
    for t in nl.affine_range(x.shape[0] // rows):
        tile = nl.load(x[t * rows:(t + 1) * rows, :])
        nl.store(out[t * rows:(t + 1) * rows, :], value=nl.multiply(tile, 2.0))
    return out
'''
CLEAN = HEAD + BODY.format(rows="nl.tile_size.pmax")
# a pre-release spelling: `program_id` lives in nki.language, never in neuronxcc.nki itself (line 3)
PRE_RELEASE = HEAD + "from neuronxcc.nki import program_id\n" + BODY.format(rows="nl.tile_size.pmax")
# 256-row tiles: the simulator stops at the first load (line 10), before any transfer is traced
TALL = HEAD + BODY.format(rows="2 * nl.tile_size.pmax")


def _draft(tmp_path: Path, kernel: str):
    (tmp_path / "submission.toml").write_text(MANIFEST)
    (tmp_path / "reference.py").write_text(REFERENCE)
    (tmp_path / "kernel.py").write_text(kernel)
    sub = load_submission(tmp_path)
    bundle = gather(sub, exclude=("perf", "numerics"))  # the simulation and the static evidence are what matter
    rubric = load_rubric()
    return sub, bundle, rubric, RulesDrafter().draft(sub, bundle, rubric)


def _state(sub, bundle, rubric, criterion_id: str) -> str:
    criterion = next(c for c in rubric.criteria if c.id == criterion_id)
    return criterion_state(criterion, sub, bundle, rubric)[1]


def test_apis_no_release_has_cost_the_platform_and_mark_what_was_not_observed(tmp_path):
    sub, bundle, rubric, d = _draft(tmp_path, PRE_RELEASE)
    (finding,) = bundle.of_kind("nki.undocumented-nki-api")
    assert (finding.location.start_line, finding.labels["api"]) == (3, "neuronxcc.nki.program_id")
    platform = d.criterion("neuron_platform")
    assert platform.score == 1 and finding.id in {c.evidence_id for c in platform.citations}
    for cid in ("tiling", "precision"):
        c = d.criterion(cid)
        assert c.status == "scored" and "unobserved" in {f.code for f in c.flags}, cid
        assert "Judged on the source alone, not observed" in c.rationale and "kernel.py:3" in c.rationale, cid
        assert _state(sub, bundle, rubric, cid) == "unobserved"
    # nothing measured the memory traffic or the transfers: no basis, no score
    assert d.criterion("memory_hierarchy").status == "unscored"
    assert d.criterion("data_movement").status == "unscored"


def test_a_kernel_stopped_at_its_first_load_reads_memory_and_transfers_from_the_source_only(tmp_path):
    sub, bundle, rubric, d = _draft(tmp_path, TALL)
    (stop,) = bundle.of_kind("sim.error")
    assert stop.location.start_line == 10
    assert d.criterion("kernel_correctness").score == 1
    assert "unobserved" not in {f.code for f in d.criterion("kernel_correctness").flags}  # the stop is its evidence
    for cid in ("memory_hierarchy", "data_movement", "precision"):
        c = d.criterion(cid)
        assert c.status == "scored" and "unobserved" in {f.code for f in c.flags}, cid
        assert f"[{stop.id}] at kernel.py:10" in c.rationale, cid
        assert stop.id in {x.evidence_id for x in c.citations}, cid
        assert _state(sub, bundle, rubric, cid) == "unobserved"


def test_a_kernel_that_ran_to_the_end_is_not_marked(tmp_path):
    _, bundle, _, d = _draft(tmp_path, CLEAN)
    assert not bundle.of_kind("sim.error", "sim.incomplete", "nki.undocumented-nki-api")
    for c in d.criteria:
        assert "unobserved" not in {f.code for f in c.flags}, c.criterion_id
        # positive evidence is named once, under "Why it is this high", never as a score step
        assert "Score lowered by none" not in (c.rationale or ""), c.criterion_id
    assert "Why it is this high" in d.criterion("data_movement").rationale


def test_a_model_score_on_an_unobserved_criterion_is_flagged_too():
    from evidence.model import EvidenceBundle, EvidenceItem, Location, Severity
    from grader.drafting.guards import evidence_flags

    stop = EvidenceItem(id="sim.error:err_num_partition_exceed_arch_limit", kind="sim.error", analyzer="nki-simulator@2",
                        severity=Severity.critical, title="Simulation stopped: err_num_partition_exceed_arch_limit",
                        location=Location(file="kernel.py", start_line=10, end_line=10),
                        labels={"code": "err_num_partition_exceed_arch_limit"})
    memory = load_rubric().criterion("memory_hierarchy")
    flags = evidence_flags(memory, EvidenceBundle(submission_hash="sha256:x", items=(stop,)), 5)
    assert [(f.code, f.evidence_id) for f in flags] == [("unobserved", stop.id)]
    assert "kernel.py:10" in flags[0].message
