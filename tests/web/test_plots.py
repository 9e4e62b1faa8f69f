"""The roofline on the draft page comes from the cost model's own plot (grader.reports.roofline)."""

from __future__ import annotations

import base64

import pytest

from evidence.model import EvidenceItem
from grader.draft import Draft
from grader.web import draft_view
from grader.web.plots import roofline_image


def roofline_item() -> EvidenceItem:
    return EvidenceItem(id="perf.roofline:kernel.py", kind="perf.roofline", analyzer="perf@1",
                        title="Roofline: 85 FLOP/B against a ridge point of 217 FLOP/B (memory-bound)",
                        metrics={"arithmetic_intensity": 85.0, "ridge_point": 217.0, "achieved_tflops": 40.0,
                                 "attainable_tflops": 246.0, "peak_tflops": 667.0, "hbm_gbps": 2900.0,
                                 "memory_gbps": 2900.0, "roofline_efficiency": 0.4},
                        labels={"regime": "memory-bound", "target": "trn2"})


def view_with(items: list[EvidenceItem]) -> draft_view.DraftView:
    draft = Draft.model_validate({
        "task_id": "t", "submission_hash": "s", "rubric": {"id": "nki-kernel-review", "version": "1", "hash": "h"},
        "drafter": {"name": "rules", "version": "1"}, "criteria": [],
        "evidence": {"submission_hash": "s", "items": [i.model_dump() for i in items]}})
    return draft_view.build(draft, {})


def test_no_roofline_without_a_cost_model_estimate():
    assert roofline_image(view_with([])) is None


def test_roofline_is_the_cost_models_svg_as_a_data_uri():
    pytest.importorskip("grader.reports.roofline", reason="the cost model's roofline report has not landed")
    uri = roofline_image(view_with([roofline_item()]))
    assert uri is not None and uri.startswith("data:image/svg+xml;base64,")
    svg = base64.b64decode(uri.split(",", 1)[1]).decode()
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "<script" not in svg
