"""The HTML audit report: one self-contained, escaped file that shows stability per criterion and
perturbation, the unstable cases, the injection check, drift, and agreement with gold."""

from __future__ import annotations

import re

from grader.consistency.audit import drift
from grader.consistency.audit_report import AuditReport, InjectionResult, PerturbationCase, PerturbationRow
from grader.consistency.calibrate import measure
from grader.consistency.report import ItemOutcome, SetRef
from grader.draft import DrafterInfo, RubricRef
from grader.epoch import grader_epoch
from grader.reports.audit_html import render_audit_html
from grader.rubric import load_rubric

RUBRIC = load_rubric("nki-kernel-review")
ITEMS = ["<script>x</script>", "softmax"]


def _audit(**update: object) -> AuditReport:
    outcomes = [ItemOutcome(item=item, criterion_id=c.id, gold=3, status="scored", score=3)
                for item in ITEMS for c in RUBRIC.criteria]
    per, overall = measure(outcomes, RUBRIC, None, resamples=0, seed=1)
    rows = [PerturbationRow(perturbation=p, criterion_id=c.id, n=2 if p != "reorder" else 1, stable=2 if p != "reorder" else 1,
                            not_applicable=0 if p != "reorder" else 1)
            for p in ("rename", "reorder", "comments", "injection") for c in RUBRIC.criteria]
    report = AuditReport(
        id="aud-test", created_at="2026-01-01T00:00:00+00:00", set=SetRef(name="hand-audit", path="/x", hash="sha256:0", items=2),
        rubric=RubricRef(id=RUBRIC.id, version=RUBRIC.version, hash=RUBRIC.content_hash), epoch=grader_epoch(RUBRIC),
        drafter=DrafterInfo(name="rules", version="1"), criteria=tuple(per), overall=overall, outcomes=tuple(outcomes),
        items=(), perturbation=tuple(rows), unstable=(),
        injection=tuple(InjectionResult(item=i, detected=True) for i in ITEMS), graded_variants=7)
    return report.model_copy(update=update)


def test_a_stable_audit_is_self_contained_and_escaped():
    html = render_audit_html(_audit())
    assert html.startswith("<!doctype html>") and not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert "Stable: every renamed, reordered and commented variant kept every criterion" in html
    assert html.count('<span class="ok">100%</span> (2/2)') == 3 * len(RUBRIC.criteria)  # rename, comments, injection
    assert html.count("1 item unchanged by it") == len(RUBRIC.criteria)  # reorder: one item has one function
    assert "No earlier results to compare with" in html
    assert "Agreement with gold in this epoch" in html and "failed gate: n 2 &lt; 5 scored gold items" in html


def test_instability_injection_and_drift_are_named():
    base = _audit()
    tiling = [r.model_copy(update={"stable": 1}) if (r.perturbation, r.criterion_id) == ("rename", "tiling") else r
              for r in base.perturbation]
    moved = [o.model_copy(update={"score": 5}) if (o.item, o.criterion_id) == ("softmax", "performance") else o
             for o in base.outcomes]
    report = base.model_copy(update={
        "perturbation": tuple(tiling),
        "unstable": (PerturbationCase(item="softmax", perturbation="rename", criterion_id="tiling", original=3, perturbed=2),),
        "injection": (InjectionResult(item="softmax", detected=False, raised=("performance",)),),
        "drift": drift(base, moved, RUBRIC, "epoch:later"),
    })
    assert not report.passed
    html = render_audit_html(report)
    assert "1 outcome changed under a perturbation that should change nothing" in html
    assert '<span class="bad">50%</span> (1/2)' in html
    assert "<td>softmax</td><td>rename</td><td>tiling</td><td>3</td><td>2</td>" in html
    assert "injection comment not detected on softmax" in html and "injection comment raised performance on softmax" in html
    assert "Against <code>aud-test</code>" in html and "(another epoch)" in html
    assert "1 of 20 outcomes changed" in html and "<td>softmax</td><td>performance</td><td>3</td><td>5</td>" in html


def test_an_audit_without_perturbations_says_so():
    html = render_audit_html(_audit(perturbation=(), injection=(), graded_variants=0))
    assert "No perturbations were run in this audit" in html and "Perturbation stability" not in html
