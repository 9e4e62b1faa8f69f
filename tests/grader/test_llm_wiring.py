"""`grader evaluate --drafter llm` and `POST /v1/evaluations {"drafter": "llm"}` reach the model path.

The loopback fake OpenAI server answers each criterion by citing the first evidence id its prompt
lists, so the real litellm + instructor path runs on a real example and its real evidence.
"""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from grader.cli import app
from grader.service.worker import Worker
from tests.api.test_api import local_app, upload
from tests.conftest import EXAMPLES
from tests.fakes.openai_server import FakeOpenAIServer, verdict

EVIDENCE_LINE = re.compile(r"^\[([^\]\s]+)\] \S+ \| severity", re.M)


def cite_first_listed(body: dict) -> object:
    prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
    ids = EVIDENCE_LINE.findall(prompt)
    return verdict(3, ids[0], rationale=f"Judged from {ids[0]}.")


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with FakeOpenAIServer(default=cite_first_listed) as srv:
        yield srv


def test_cli_llm_drafter(server, tmp_path):
    result = CliRunner().invoke(app, [
        "evaluate", str(EXAMPLES / "matmul-tiled"), "--format", "json", "--drafter", "llm",
        "--model", "openai/fake-judge", "--api-base", server.base_url, "--no-cache", "--samples", "2",
    ])
    assert result.exit_code == 0, result.output
    draft = json.loads(result.stdout)
    assert draft["drafter"]["name"] == "llm" and draft["drafter"]["model"] == "openai/fake-judge"
    scored = [c for c in draft["criteria"] if c["status"] == "scored"]
    assert scored
    for c in scored:
        assert (c["score"], len(c["samples"])) == (3, 2), (c, draft["record"]["calls"])
    ids = {i["id"] for i in draft["evidence"]["items"]}
    assert all(cit["evidence_id"] in ids for c in scored for cit in c["citations"])
    assert len(server.requests) == 2 * len(scored)  # k samples per applicable criterion, no cache


def test_api_llm_drafter(server, tmp_path):
    body = upload(EXAMPLES / "softmax-ragged-defect") | {"drafter": "llm", "model": "openai/fake-judge"}
    with TestClient(local_app(tmp_path, api_base=server.base_url, use_cache=False,
                              allowed_models="openai/fake-judge")) as client:
        response = client.post("/v1/evaluations", json=body)
        assert response.status_code == 202, response.text
        Worker(client.app.state.store, client.app.state.settings).run(max_jobs=1)  # the queued job, here
        response = client.get(response.headers["location"])
    assert response.json()["state"] == "done", response.text
    draft = response.json()["draft"]
    correctness = next(c for c in draft["criteria"] if c["criterion_id"] == "kernel_correctness")
    # The model's 3 breaks the rubric's cap (output mismatch): kept as drafted, flagged for a human.
    assert correctness["score"] == 3
    assert any(f["code"] == "contradicts_evidence" for f in correctness["flags"])


def test_llm_without_model_is_a_one_line_error():
    result = CliRunner().invoke(app, ["evaluate", str(EXAMPLES / "matmul-tiled"), "--drafter", "llm"])
    assert result.exit_code == 2
    assert "needs a model" in result.stderr


def test_api_refuses_a_model_outside_the_allow_list(server, tmp_path):
    body = upload(EXAMPLES / "matmul-tiled") | {"drafter": "llm", "model": "openai/expensive-model"}
    with TestClient(local_app(tmp_path, api_base=server.base_url, model="openai/fake-judge")) as client:
        response = client.post("/v1/evaluations", json=body)
    assert response.status_code == 422
    assert "model 'openai/expensive-model' is not allowed" in response.json()["detail"]
    assert "openai/fake-judge" in response.json()["detail"] and server.requests == []


@pytest.mark.parametrize(("status", "message", "kind"), [
    (401, "Incorrect API key provided: sk-wr***", "AuthenticationError 401"),
    (404, "The model `no-such-model` does not exist", "NotFoundError 404"),
    (403, "You are not allowed to use this model", "APIError 403"),  # litellm maps this provider's 403 so; the status decides
])
def test_rejected_configuration_fails_fast_with_the_providers_message(status, message, kind, monkeypatch):
    from tests.fakes.openai_server import Reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with FakeOpenAIServer(default=lambda body: Reply(status=status, error=message)) as srv:
        result = CliRunner().invoke(app, [
            "evaluate", str(EXAMPLES / "matmul-tiled"), "--drafter", "llm", "--model", "openai/no-such-model",
            "--api-base", srv.base_url, "--no-cache"])
    assert result.exit_code == 2, result.output
    assert f"rejected the request ({kind})" in result.stderr and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert len(srv.requests) == 1  # once: not retried, and no other criterion is tried


def test_unreachable_api_base_fails_fast(monkeypatch):
    import socket

    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = CliRunner().invoke(app, [
        "evaluate", str(EXAMPLES / "matmul-tiled"), "--drafter", "llm", "--model", "openai/fake-judge",
        "--api-base", f"http://127.0.0.1:{port}/v1", "--no-cache"])
    assert result.exit_code == 2, result.output
    assert f"cannot reach the model server at http://127.0.0.1:{port}/v1" in result.stderr


def test_missing_api_key_fails_before_any_call(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GRADER_API_KEY", raising=False)
    with FakeOpenAIServer(default=cite_first_listed) as srv:
        result = CliRunner().invoke(app, [
            "evaluate", str(EXAMPLES / "matmul-tiled"), "--drafter", "llm", "--model", "openai/fake-judge",
            "--api-base", srv.base_url, "--no-cache"])
    assert result.exit_code == 2, result.output
    assert "needs OPENAI_API_KEY" in result.stderr and srv.requests == []
