"""Audits over HTTP on both databases: a server-known set re-graded as a durable job, with perturbation
stability, drift against a stored earlier audit (by job id and by epoch), the HTML report, the roles,
and the audit-log entries of every state change."""

from __future__ import annotations

import shutil

import pytest

from grader.service import audits
from grader.store import audit_log
from tests.grader.consistency.conftest import mini_set
from tests.service.test_calibration_api import finished


@pytest.fixture
def audit_set(monkeypatch, tmp_path):  # type: ignore[no-untyped-def]
    """Two items: softmax-masked has two functions (so reorder applies), matmul-reload has one."""
    root = tmp_path / "mini-audit"
    for item in ("softmax-masked", "matmul-reload"):
        shutil.copytree(mini_set() / item, root / item)
    monkeypatch.setattr(audits, "AUDIT_SET", root)
    return root


def test_bad_audit_requests_are_refused_before_queueing(client, callers, store, audit_set):
    lead = callers["lead"].headers
    assert client.post("/v1/audits", json={"set": "mini-audit"}, headers=callers["reviewer"].headers).status_code == 403
    cases = {
        "../evals/audit": "set: unknown audit set '../evals/audit'",
        "/etc/passwd": "against: no stored audit or calibration run '/etc/passwd' (expected a run id or epoch:<16 hex>)",
        "epoch:0123456789abcdef": "against: no stored audit or calibration run of epoch epoch:0123456789abcdef for set 'mini-audit'",
    }
    for value, detail in cases.items():
        body = {"set": value} if value.startswith("..") else {"set": "mini-audit", "against": value}
        r = client.post("/v1/audits", json=body, headers=lead)
        assert r.status_code == 422 and r.json()["detail"].startswith(detail), r.text
    r = client.post("/v1/audits", json={"set": "mini-audit", "perturbations": ["shuffle"]}, headers=lead)
    assert r.status_code == 422 and "perturbations[0]" in r.json()["detail"]
    assert "'rename', 'reorder', 'comments' or 'injection'" in r.json()["detail"]
    r = client.post("/v1/audits", json={"set": "mini-audit", "drafter": "llm"}, headers=lead)  # no model anywhere
    assert r.status_code == 422 and r.json()["detail"].startswith("model: the llm drafter needs a model"), r.text
    r = client.post("/v1/audits", json={"set": "mini-audit", "drafter": "llm", "model": "pricey-model"}, headers=lead)
    assert r.status_code == 422 and r.json()["detail"].startswith("model: model 'pricey-model' is not allowed on this server")
    with store.read() as session:
        assert not [e for e in audit_log.page(session, limit=1000) if e.action == "job.queued"]
    assert client.get("/v1/audits/" + "0" * 32, headers=lead).status_code == 404


@pytest.mark.slow
def test_audit_job_reports_stability_and_drift(client, callers, worker, store, audit_set):
    lead, rev = callers["lead"].headers, callers["reviewer"].headers
    r = client.post("/v1/audits", json={"set": "mini-audit", "resamples": 0}, headers=lead)
    assert r.status_code == 202 and r.headers["location"] == f"/v1/audits/{r.json()['id']}", r.text
    first = finished(client, rev, r.headers["location"])  # reviewers read audits
    assert first["state"] == "done" and first["passed"] is True, first
    report = first["report"]
    assert report["set"] == {**report["set"], "name": "mini-audit", "items": 2}
    assert report["graded_variants"] == 2 * 3 + 1 and report["drift"] is None  # one item has no reorder
    assert {(p["perturbation"], p["n"], p["stable"]) for p in report["perturbation"]} == {
        ("rename", 2, 2), ("reorder", 1, 1), ("comments", 2, 2), ("injection", 2, 2)}
    assert [(i["item"], i["detected"], i["raised"]) for i in report["injection"]] == [
        ("matmul-reload", True, []), ("softmax-masked", True, [])]
    html = client.get(r.headers["location"], headers={**rev, "Accept": "text/html"})
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert "Audit of the rules drafter on mini-audit" in html.text and "Perturbation stability" in html.text
    assert client.get(r.headers["location"], headers=callers["submitter"].headers).status_code == 403

    # Drift against the first audit, named by its job id. An epoch names its newest audit (now the second);
    # a report id or a job id names that run.
    again = client.post("/v1/audits", json={"set": "mini-audit", "resamples": 0, "against": first["id"], "perturbations": []},
                        headers=lead)
    second = finished(client, lead, again.headers["location"])["report"]
    drift = second["drift"]
    assert drift["against"] == report["id"] and drift["same_epoch"] and drift["changes"] == []
    assert {(row["n"], row["changed"]) for row in drift["rows"]} == {(2, 0)} and second["perturbation"] == []
    by_epoch = audits.earlier(store, "mini-audit", "nki-kernel-review", report["epoch"]["hash"])  # what the job compares with
    assert by_epoch is not None and by_epoch.id == second["id"]
    assert audits.earlier(store, "mini-audit", "nki-kernel-review", again.json()["id"]).id == second["id"]
    assert audits.earlier(store, "mini-audit", "nki-kernel-review", report["id"]).id == report["id"]

    # Every state change is in the hash-chained log, the stored audit beside it.
    log = client.get(f"/v1/audit-log?subject=job:{first['id']}", headers=lead).json()["items"]
    assert [e["action"] for e in log] == ["job.queued", "job.started", "job.done"]
    assert log[0]["actor"] == callers["lead"].principal.id and log[-1]["data"]["audit"] == report["id"]
    saved = client.get(f"/v1/audit-log?subject=audit:{report['id']}", headers=lead).json()["items"]
    assert [(e["action"], e["data"]["job"]) for e in saved] == [("audit.saved", first["id"])]
    with store.read() as session:
        assert audit_log.verify(session).ok
