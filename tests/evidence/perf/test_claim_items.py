"""Issue 16's classes on the calibration items written for them: each gets the evidence its gold stands on."""

from __future__ import annotations

from pathlib import Path

import pytest

from evidence.perf.claims_collector import ClaimsCollector
from evidence.perf.collector import PerfCollector
from grader.submission import load_submission

SET = Path(__file__).resolve().parents[3] / "evals" / "calibration" / "nki-review-v1"


def codes(name: str, perf: bool = False) -> dict[str, str]:
    sub = load_submission(SET / name)
    items = ClaimsCollector().collect(sub)
    if perf:
        items += PerfCollector().collect(sub)
    return {i.labels["code"]: i.severity.value for i in items if i.kind in ("claims.methodology", "claims.note", "perf.claim")}


@pytest.mark.parametrize("name, expected", [
    # 16.2: the host timer is the rubric's level-1 example; a gap of the file's [method] counts once
    ("transpose-claims-host-timer-file", {"host_timer_unsynchronized": "critical"}),
    ("avgpool-claims-file-gaps", {"no_variance": "low", "compile_not_excluded": "low"}),
    # 16.3: the notes say a cost model produced the figures labelled measured
    ("rowsum-claims-notes-cost-model", {"no_hardware": "high", "model_figures": "high", "presented_as_measured": "critical"}),
    # 16.4: bf16 kernel, the notes' fp32 baseline, no tolerance; shapes 16x apart
    ("silu-claims-fp32-baseline-in-notes", {"baseline_precision": "medium", "precision_parity": "high"}),
    ("transpose-claims-shape-parity", {"shape_parity": "high"}),
])
def test_methodology_notes_and_parity_classes(name, expected):
    assert codes(name) == expected


def test_file_level_gaps_are_one_item_each_for_two_claims():
    items = [i for i in ClaimsCollector().collect(load_submission(SET / "avgpool-claims-file-gaps"))
             if i.kind == "claims.methodology"]
    assert len(items) == 2 and all(i.labels["claim"] == "latency,speedup" for i in items)


@pytest.mark.slow
def test_claims_against_physics_and_the_kernel():
    # 16.1: 3.15 MB through HBM in 2.5 us is 1.26 TB/s on one core; 266 GB/s is 74% of the core's share
    impossible = codes("silu-claims-impossible-bandwidth", perf=True)
    assert impossible == {"below_physical_bound": "critical"}
    assert codes("rowsum-claims-plausible-profile", perf=True) == {"consistent_with_model": "info"}
