"""Audit and drift pages over the service's run store (the audit machinery itself is tested in
tests/grader/consistency; here a small report is built from its models and saved as the service would)."""

from __future__ import annotations

from grader.consistency.audit_report import (
    AuditReport,
    Drift,
    DriftChange,
    DriftRow,
    InjectionResult,
    PerturbationCase,
    PerturbationRow,
)

from grader.consistency.compare import compare
from grader.consistency.report import ItemOutcome, ItemRecord, SetRef
from grader.draft import DrafterInfo, RubricRef
from grader.epoch import GraderEpoch
from grader.rubric import Gates
from grader.service.runs import run_store


def small_audit(audit_id: str = "audit-1") -> AuditReport:
    gates = Gates()
    agreement = compare("tiling", [(3, 3), (4, 3), (2, 2)], gates, labels=[1, 2, 3, 4, 5], resamples=20)
    overall = compare("overall", [(3, 3), (4, 3), (2, 2)], gates, labels=[1, 2, 3, 4, 5], resamples=20)
    return AuditReport(
        id=audit_id, created_at="2026-12-01T05:00:00+00:00", set=SetRef(name="audit", path="evals/audit", hash="h", items=3),
        rubric=RubricRef(id="nki-kernel-review", version="1", hash="r"), epoch=GraderEpoch(parts={"rubric": "r"}),
        drafter=DrafterInfo(name="rules", version="1"), criteria=(agreement,), overall=overall,
        outcomes=(ItemOutcome(item="gelu", criterion_id="tiling", gold=3, status="scored", score=3),),
        items=(ItemRecord(item="gelu"),),
        drift=Drift(against="cal-0", against_epoch="epoch:old", same_epoch=False,
                    rows=(DriftRow(criterion_id="tiling", n=3, changed=1, qwk=0.5, exact=0.67),),
                    changes=(DriftChange(item="gelu", criterion_id="tiling", before=4, after=3),)),
        perturbation=(PerturbationRow(perturbation="rename", criterion_id="tiling", n=3, stable=2, not_applicable=0),
                      PerturbationRow(perturbation="reorder", criterion_id="tiling", n=3, stable=3, not_applicable=0)),
        unstable=(PerturbationCase(item="gelu", perturbation="rename", criterion_id="tiling", original=3, perturbed=2),),
        injection=(InjectionResult(item="gelu", detected=True), InjectionResult(item="exp <script>", detected=False,
                                                                                raised=("tiling",))),
        graded_variants=12)


def test_audit_list_and_drift_page(web):
    run_store(web.store, web.settings).save_audit(small_audit())
    lead = web.sign_in("lead")
    listing = lead.get("/ui/audits")
    assert listing.status_code == 200 and 'href="/ui/audits/audit-1"' in listing.text and "unstable or injection raised" in listing.text
    page = lead.get("/ui/audits/audit-1").text
    assert "Not stable:" in page and "invariant perturbations moved some outcomes" in page
    assert "<b><span aria-hidden=\"true\">✗ </span>2/3</b>" in page and "<td class=\"n\">3/3</td>" in page
    assert "gelu</code> · tiling: 4 → <b>3</b>" in page  # the drift change
    assert "exp &lt;script&gt;" in page and "<script" not in page
    assert lead.get("/ui/audits/nope").status_code == 404
    assert web.sign_in("reviewer").get("/ui/audits").status_code == 403
