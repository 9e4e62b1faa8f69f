"""Audit and drift pages over grader.service.audits: a lead starts an audit from the page (a durable job,
as POST /v1/audits), and its page shows drift, the stability grid, unstable cases and injection results.
The grading itself is tested in tests/grader/consistency and tests/service/test_audits_api.py; here
the job's grading is replaced by a small report built from the audit models, so that every part of
the page has something to show."""

from __future__ import annotations

import grader.consistency.audit
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
from grader.service import audits
from grader.service.worker import Worker
from tests.grader.consistency.conftest import mini_set
from tests.web.conftest import csrf


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


def test_start_an_audit_and_read_its_drift_page(web, monkeypatch):
    monkeypatch.setattr(audits, "AUDIT_SET", mini_set())
    monkeypatch.setattr(grader.consistency.audit, "run_audit", lambda *args, **kw: small_audit())
    lead = web.sign_in("lead")
    listing = lead.get("/ui/audits")
    assert listing.status_code == 200 and "No audit yet." in listing.text and "<option>mini-set</option>" in listing.text
    assert listing.text.count('name="perturbation"') == 4 and listing.text.count(" checked>") == 4
    bad = lead.post("/ui/audits", data={"csrf": csrf(listing.text), "set": "mini-set", "against": "epoch:0123456789abcdef"})
    assert bad.status_code == 422 and "against: no stored audit or calibration run of epoch" in bad.text
    assert 'value="epoch:0123456789abcdef"' in bad.text  # what was typed stays in the form
    started = lead.post("/ui/audits", data={"csrf": csrf(listing.text), "set": "mini-set", "resamples": "0",
                                            "perturbation": ["rename", "injection"]})
    assert started.status_code == 303
    url = started.headers["location"]
    job_id = url.rsplit("/", 1)[1]
    assert audits.get_audit(web.store, job_id).set == "mini-set"
    queued = lead.get(url).text
    assert "is <b>queued</b>" in queued and 'http-equiv="refresh"' in queued
    Worker(web.store, web.settings, poll_s=0.01).run(max_jobs=1)

    page = web.sign_in("reviewer").get(url).text  # reviewers read audits, as over the API
    assert "Not stable:" in page and "invariant perturbations moved some outcomes" in page
    assert "<b><span aria-hidden=\"true\">✗ </span>2/3</b>" in page and "<td class=\"n\">3/3</td>" in page
    assert "gelu</code> · tiling: 4 → <b>3</b>" in page  # the drift change
    assert "exp &lt;script&gt;" in page and "<script" not in page
    report = lead.get(url + "/report")
    assert report.status_code == 200 and "script-src" not in report.headers["content-security-policy"]
    listing = lead.get("/ui/audits").text
    assert f'href="{url}"' in listing and "unstable or injection raised" in listing
    log = lead.get("/ui/audit-log").text
    assert log.count(f'href="{url}"') == 4  # job.queued, job.started, audit.saved, job.done
    assert lead.get("/ui/audits/nope").status_code == 404
    assert web.sign_in("reviewer").get("/ui/audits").status_code == 403
