"""A submission without a reference is never simulated, and its draft says so: the criteria the simulation
informs (tiling, memory hierarchy, data movement, precision, platform, performance) are flagged `unobserved`,
their rationales read "judged on the source alone" and cite the `sim.not_run` item; kernel and numerical
correctness are not applicable. A submission with a reference is not marked.

Every kernel here is written for these tests (rows times two, 256 x 512 fp32)."""

from __future__ import annotations

from pathlib import Path

from evidence.gather import gather
from evidence.nki.collector import SimulationCollector
from grader.submission import load_submission
from tests.grader.scale_rows import drafted, write

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(x.shape[0] // 128):
        tile = nl.load(x[t * 128:(t + 1) * 128, :])
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.multiply(tile, 2.0))
    return out
'''
SIM_CRITERIA = ("tiling", "memory_hierarchy", "data_movement", "precision", "neuron_platform", "performance")


def _folder(tmp_path: Path, reference: bool) -> Path:
    return write(tmp_path, KERNEL, rows=256, reference=reference)


def test_without_a_reference_the_simulator_says_it_did_not_run(tmp_path):
    sub = load_submission(_folder(tmp_path, reference=False))
    (item,) = SimulationCollector().collect(sub)
    assert (item.kind, item.labels["reason"], item.location.file, item.location.start_line) == (
        "sim.not_run", "no_reference", "kernel.py", 6)
    assert item.title == "Not simulated: the submission has no reference to compare with"


def test_a_draft_without_a_reference_marks_what_the_simulation_would_have_observed(tmp_path):
    sub = load_submission(_folder(tmp_path, reference=False))
    bundle = gather(sub, exclude=("numerics",))  # the trace-only cost estimate (perf) runs without a reference
    (item,) = bundle.of_kind("sim.not_run")
    d = drafted(sub, bundle)
    for cid in SIM_CRITERIA:
        c = d.criterion(cid)
        assert c.status == "scored", (cid, c.rationale)
        assert "Judged on the source alone, not observed" in c.rationale and "never simulated" in c.rationale, cid
        assert "unobserved" in {f.code for f in c.flags} and item.id in {x.evidence_id for x in c.citations}, cid
    assert d.criterion("kernel_correctness").status == "not_applicable"


def test_a_draft_with_a_reference_is_not_marked(tmp_path):
    sub = load_submission(_folder(tmp_path, reference=True))
    bundle = gather(sub, exclude=("perf", "numerics"))
    assert not bundle.of_kind("sim.not_run")
    d = drafted(sub, bundle)
    assert not [c.criterion_id for c in d.criteria if "unobserved" in {f.code for f in c.flags}]
