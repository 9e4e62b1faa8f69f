"""The evaluation lifecycle over HTTP on both databases: submit (202 + Location, or the draft within
?wait), poll, review with reasons, sign off by someone else, and the audit trail of it all."""

from __future__ import annotations

import json
import threading
import time

import pytest

from fastapi.testclient import TestClient
from sqlalchemy import event, select
from typer.testing import CliRunner

from grader.api.app import create_app
from grader.cli import app as cli_app
from grader.draft import Flag
from grader.service import evaluations, jobs
from grader.service.evaluations import KIND
from grader.store.models import AuditEntry, DraftRow
from tests.conftest import EXAMPLES
from tests.service.conftest import upload


def poll(client, caller, location: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(location, headers=caller.headers).json()
        if body["state"] in ("done", "failed"):
            return body
        time.sleep(0.05)
    raise AssertionError(f"{location} did not finish: {body}")


def test_submit_poll_review_sign_off(client, callers, worker, store, db_url):
    sub, rev, rev2 = callers["submitter"], callers["reviewer"], callers["reviewer2"]
    r = client.post("/v1/evaluations", json=upload("softmax-ragged-defect"), headers=sub.headers)
    assert r.status_code == 202, r.text
    assert r.headers["location"] == f"/v1/evaluations/{r.json()['id']}" and r.json()["state"] == "queued"
    done = poll(client, sub, r.headers["location"])
    assert done["state"] == "done" and done["review_state"] == "pending" and done["attempts"] == 1
    assert done["draft"]["task_id"] == "softmax-ragged-rows" or done["draft"]["task_id"]
    loc = r.headers["location"]
    drafted = {c["criterion_id"]: c["drafted"] for c in done["criteria"]}

    # Submitters cannot review; an edit needs a reason.
    assert client.post(f"{loc}/reviews", json={"decisions": [{"criterion_id": "tiling", "action": "accept"}]},
                       headers=sub.headers).status_code == 403
    no_reason = client.post(f"{loc}/reviews", json={"decisions": [{"criterion_id": "tiling", "action": "edit", "score": 4}]},
                            headers=rev.headers)
    assert no_reason.status_code == 422 and no_reason.json()["detail"] == "tiling.reason: an edit needs a reason"

    reviewed = client.post(f"{loc}/reviews", headers=rev.headers, json={"decisions": [
        {"criterion_id": "kernel_correctness", "action": "accept"},
        {"criterion_id": "tiling", "action": "edit", "score": 4, "reason": "ragged tile is handled by the mask"},
        {"criterion_id": "benchmarking", "action": "edit", "not_applicable": True, "reason": "no claims made"},
    ]})
    assert reviewed.status_code == 200, reviewed.text
    body = reviewed.json()
    assert body["review_state"] == "in_review"
    edit = next(x for x in body["reviews"] if x["criterion_id"] == "tiling")
    assert edit["previous"] == drafted["tiling"] and edit["new"] == {"status": "scored", "score": 4}
    assert edit["author"] == rev.principal.id and edit["epoch"] == body["epoch"] and edit["reason"]

    signed = client.post(f"{loc}/sign-off", json={"comment": "checked"}, headers=rev2.headers)
    assert signed.status_code == 200, signed.text
    final = signed.json()["sign_off"]["final"]
    assert final["tiling"] == {"status": "scored", "score": 4}
    assert final["benchmarking"]["status"] == "not_applicable"
    assert final["kernel_correctness"] == drafted["kernel_correctness"]
    assert signed.json()["review_state"] == "signed_off"
    again = client.post(f"{loc}/reviews", json={"decisions": [{"criterion_id": "tiling", "action": "accept"}]},
                        headers=rev.headers)
    assert again.status_code == 409 and "signed off" in again.json()["detail"]

    with store.read() as s:
        actions = [e.action for e in s.scalars(select(AuditEntry).where(AuditEntry.subject == f"job:{done['id']}")
                                                .order_by(AuditEntry.seq))]
    assert actions == ["job.queued", "job.started", "job.done", "review.accept", "review.edit", "review.edit",
                       "evaluation.signed_off"]
    verify = CliRunner().invoke(cli_app, ["log", "verify"], env={"GRADER_DATABASE_URL": db_url})
    assert verify.exit_code == 0, verify.output


def test_wait_returns_the_same_draft_as_the_cli(client, callers, worker):
    r = client.post("/v1/evaluations?wait=60", json=upload("matmul-tiled"), headers=callers["submitter"].headers)
    assert r.status_code == 200, r.text
    cli = CliRunner().invoke(cli_app, ["evaluate", str(EXAMPLES / "matmul-tiled"), "--format", "json"])
    assert r.json()["draft"] == json.loads(cli.stdout)


def test_idempotency_key_returns_the_same_job(client, callers):
    h = {**callers["submitter"].headers, "Idempotency-Key": "retry-1"}
    first = client.post("/v1/evaluations", json=upload(), headers=h)
    second = client.post("/v1/evaluations", json=upload(), headers=h)
    other = client.post("/v1/evaluations", json=upload(), headers=callers["submitter"].headers)
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"] != other.json()["id"]
    # Keys are per caller: another caller's same key is another job.
    theirs = client.post("/v1/evaluations", json=upload(), headers={**callers["reviewer"].headers, "Idempotency-Key": "retry-1"})
    assert theirs.json()["id"] != first.json()["id"]


def test_full_queue_answers_429_with_retry_after(store, callers, settings):
    client = TestClient(create_app(settings.model_copy(update={"queue_max": 2}), store))
    h = callers["submitter"].headers
    assert [client.post("/v1/evaluations", json=upload(), headers=h).status_code for _ in range(2)] == [202, 202]
    full = client.post("/v1/evaluations", json=upload(), headers=h)
    assert full.status_code == 429 and int(full.headers["retry-after"]) > 0
    assert "queue is full" in full.json()["detail"]


def test_a_failing_job_reports_a_one_line_reason_without_retrying(store, settings, callers, client, worker):
    sub = callers["submitter"]
    r = client.post("/v1/evaluations", json=upload(), headers=sub.headers)
    with store.write() as s:  # a job whose drafter cannot run (the API refuses such uploads up front)
        job, _ = jobs.enqueue(s, kind=KIND, params={"rubric": "nki-kernel-review", "drafter": "llm"},
                              submitted_by=sub.principal.id, max_attempts=3, queue_max=10,
                              submission_id=r.json()["submission_id"], task_id="t")
    failed = poll(client, sub, f"/v1/evaluations/{job.id}")
    assert failed["state"] == "failed" and failed["attempts"] == 1
    assert failed["error"] == "the llm drafter needs a model: pass --model or set GRADER_MODEL"
    refused = client.post("/v1/evaluations", json={**upload(), "drafter": "llm"}, headers=sub.headers)
    assert refused.status_code == 422 and refused.json()["detail"].startswith("model: the llm drafter needs a model")


def _contradicts(c: dict) -> None:  # as a model score that broke an evidence cap is flagged
    c["flags"].append(Flag(code="contradicts_evidence", message="score 5 above cap 2").model_dump())


def _consistency(**fields: object):  # type: ignore[no-untyped-def]
    def apply(c: dict) -> None:  # as the consistency check sets it from a calibration run
        c["consistency"] = {"calibration": "calibrated", "calibrated": True, "epoch": "epoch:x",
                            "needs_full_review": True, **fields}
    return apply


@pytest.mark.parametrize(("mark", "blocker"), [
    (_contradicts, "flagged contradicts_evidence: score 5 above cap 2"),
    (_consistency(far_from_gold=True), "far_from_gold: the score is two or more levels from the gold"),
    (_consistency(calibration="failed gate: qwk 0.41 < 0.70", calibrated=False), "calibration failed gate: qwk 0.41"),
])
def test_flagged_criteria_need_an_acknowledgement_before_sign_off(client, callers, worker, store, mark, blocker):
    sub, rev, rev2 = callers["submitter"], callers["reviewer"], callers["reviewer2"]
    r = client.post("/v1/evaluations?wait=60", json=upload(), headers=sub.headers)
    eid = r.json()["id"]
    with store.write() as s:
        row = s.get(DraftRow, eid)
        draft = json.loads(row.draft_json)
        mark(draft["criteria"][0])
        row.draft_json = json.dumps(draft)
    crit = draft["criteria"][0]["criterion_id"]
    state = client.get(f"/v1/evaluations/{eid}", headers=rev.headers).json()
    assert len(state["criteria"][0]["blockers"]) == 1 and state["criteria"][0]["blockers"][0].startswith(blocker)
    blocked = client.post(f"/v1/evaluations/{eid}/sign-off", headers=rev2.headers)
    assert blocked.status_code == 409 and crit in blocked.json()["detail"]
    bare = client.post(f"/v1/evaluations/{eid}/reviews", headers=rev.headers,
                       json={"decisions": [{"criterion_id": crit, "action": "accept"}]})
    assert bare.status_code == 422 and "acknowledge it with a reason" in bare.json()["detail"]
    ack = client.post(f"/v1/evaluations/{eid}/reviews", headers=rev.headers,
                      json={"decisions": [{"criterion_id": crit, "action": "accept", "reason": "cap is right; draft ok"}]})
    assert ack.status_code == 200 and ack.json()["criteria"][0]["acknowledged"]
    assert client.post(f"/v1/evaluations/{eid}/sign-off", headers=rev2.headers).status_code == 200


def test_nobody_signs_off_their_own_submission(client, callers, worker):
    rev = callers["reviewer"]
    r = client.post("/v1/evaluations?wait=60", json=upload(), headers=rev.headers)
    own = client.post(f"/v1/evaluations/{r.json()['id']}/sign-off", headers=rev.headers)
    assert own.status_code == 403 and "another reviewer" in own.json()["detail"]


def test_queue_lists_filters_and_pages(client, callers, worker, store):
    sub, rev = callers["submitter"], callers["reviewer"]
    ids = [client.post("/v1/evaluations?wait=60", json=upload(n), headers=sub.headers).json()["id"]
           for n in ("matmul-tiled", "softmax-ragged-defect", "rmsnorm-cuda-port")]
    client.post(f"/v1/evaluations/{ids[0]}/reviews", headers=rev.headers,
                json={"decisions": [{"criterion_id": "tiling", "action": "accept"}]})
    client.post(f"/v1/evaluations/{ids[0]}/sign-off", headers=rev.headers)
    page = client.get("/v1/evaluations?limit=2", headers=rev.headers).json()
    assert page["total"] == 3 and [x["id"] for x in page["items"]] == ids[:2]
    assert [x["id"] for x in client.get("/v1/evaluations?offset=2", headers=rev.headers).json()["items"]] == ids[2:]
    listed = client.get("/v1/evaluations", headers=rev.headers).json()["items"]
    assert [x["review_state"] for x in listed] == ["signed_off", "pending", "pending"]
    assert all(x["state"] == "done" and isinstance(x["calibrated"], bool) for x in listed)
    flagged = [x["id"] for x in listed if x["flags"]]
    assert [x["id"] for x in client.get("/v1/evaluations?flag=any", headers=rev.headers).json()["items"]] == flagged
    # The listing is two statements (the page and the total) whatever the page size: no query per row.
    # Only this thread's statements count: the worker fixture polls the same engine from its own thread.
    statements: list[str] = []
    me = threading.get_ident()

    def count(conn, cursor, statement, *rest) -> None:  # type: ignore[no-untyped-def]
        if threading.get_ident() == me:
            statements.append(statement)

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        assert len(evaluations.list_queue(store, rev.principal, limit=200).items) == 3
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 2
    assert [x["id"] for x in client.get("/v1/evaluations?state=needs_review", headers=rev.headers).json()["items"]] == ids[1:]
    assert [x["id"] for x in client.get("/v1/evaluations?state=signed_off", headers=rev.headers).json()["items"]] == ids[:1]
    assert [x["id"] for x in client.get(f"/v1/evaluations?reviewer={rev.principal.name}", headers=rev.headers).json()["items"]] == ids[:1]
    task = client.get(f"/v1/evaluations/{ids[1]}", headers=rev.headers).json()["task_id"]
    assert [x["id"] for x in client.get(f"/v1/evaluations?task={task}", headers=rev.headers).json()["items"]] == [ids[1]]
    bad = client.get("/v1/evaluations?state=lost", headers=rev.headers)
    assert bad.status_code == 422 and bad.json()["detail"].startswith("state: unknown state 'lost'")
    # A submitter sees their own evaluations only; another submitter's are "not found".
    assert client.get("/v1/evaluations", headers=callers["reviewer2"].headers).json()["total"] == 3
    other = client.post("/v1/evaluations", json=upload(), headers=rev.headers).json()["id"]
    assert client.get(f"/v1/evaluations/{other}", headers=sub.headers).status_code == 404
    assert other not in [x["id"] for x in client.get("/v1/evaluations?limit=200", headers=sub.headers).json()["items"]]

