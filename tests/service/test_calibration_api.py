"""Calibration over HTTP on both databases: a run of a server-known set as a durable job (JSON and
HTML report), drafts checked against it, reviewer scores and reviewer certification."""

from __future__ import annotations

import time
import tomllib

import pytest

from grader.service import calibration
from tests.grader.consistency.conftest import mini_set
from tests.service.conftest import upload


@pytest.fixture
def sets(monkeypatch):  # type: ignore[no-untyped-def]
    root = mini_set()
    monkeypatch.setattr(calibration, "SETS_ROOT", root.parent)
    return root


def finished(client, headers, location: str, timeout_s: float = 900) -> dict:  # type: ignore[no-untyped-def]
    """The job's final view. Generous: an audit grades several variants, and CI machines are shared."""
    deadline = time.monotonic() + timeout_s
    while True:
        body = client.get(location, headers=headers).json()
        if body["state"] in ("done", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert body["state"] in ("done", "failed"), body
    return body


def gold_scores(root) -> list[dict]:  # type: ignore[no-untyped-def]
    out = []
    for gold in sorted(root.glob("*/gold.toml")):
        for crit, label in tomllib.loads(gold.read_text())["criteria"].items():
            out.append({"item": gold.parent.name, "criterion": crit, "score": label["score"]})
    return out


@pytest.mark.slow
def test_calibration_run_reviewer_scores_and_certification(client, callers, worker, sets):
    lead, rev, rev2 = callers["lead"], callers["reviewer"], callers["reviewer2"]
    body = {"set": "mini-set", "resamples": 50}
    assert client.post("/v1/calibration-runs", json=body, headers=rev.headers).status_code == 403
    unknown = client.post("/v1/calibration-runs", json={"set": "../etc"}, headers=lead.headers)
    assert unknown.status_code == 422 and unknown.json()["detail"].startswith("set: unknown calibration set '../etc'")

    # Before any run: scores are accepted, certification needs a run to stand beside.
    scores = gold_scores(sets)
    stored = client.post("/v1/reviewer-scores", json={"set": "mini-set", "scores": scores}, headers=rev.headers)
    assert stored.status_code == 200 and stored.json()["stored"] == len(scores)
    early = client.get(f"/v1/reviewers/{rev.principal.name}/calibration?set=mini-set", headers=rev.headers)
    assert early.status_code == 409 and "no calibration run" in early.json()["detail"]

    r = client.post("/v1/calibration-runs", json=body, headers=lead.headers)
    assert r.status_code == 202, r.text
    run = finished(client, lead.headers, r.headers["location"])
    assert run["state"] == "done", run
    report = run["report"]
    assert report["set"]["name"] == "mini-set" and report["set"]["items"] == 5
    html = client.get(r.headers["location"], headers={**lead.headers, "Accept": "text/html"})
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html") and "mini-set" in html.text

    # Drafts of the same grader epoch are checked against the run stored in the database.
    draft = client.post("/v1/evaluations?wait=60", json=upload(), headers=callers["submitter"].headers).json()["draft"]
    assert {c["consistency"]["run_id"] for c in draft["criteria"]} == {report["id"]}

    cal = client.get(f"/v1/reviewers/{rev.principal.name}/calibration?set=mini-set", headers=rev.headers)
    assert cal.status_code == 200, cal.text
    assert cal.json()["run_id"] == report["id"] and cal.json()["report"]["items"] == 5
    exact = [c["agreement"]["exact"]["value"] for c in cal.json()["report"]["criteria"]]
    assert set(exact) - {None} == {1.0}  # scored exactly as gold wherever gold has a score
    assert set(cal.json()["certified"]) == {c["criterion_id"] for c in cal.json()["report"]["criteria"]}
    assert client.get(f"/v1/reviewers/{rev.principal.name}/calibration?set=mini-set", headers=rev2.headers).status_code == 403
    assert client.get(f"/v1/reviewers/{rev.principal.id}/calibration?set=mini-set", headers=lead.headers).status_code == 200

    bad = client.post("/v1/reviewer-scores", headers=rev.headers,
                      json={"set": "mini-set", "scores": [{"item": "nope", "criterion": "tiling", "score": 3}]})
    assert bad.status_code == 422 and bad.json()["detail"] == "scores[0].item: unknown item 'nope' in set 'mini-set'"
