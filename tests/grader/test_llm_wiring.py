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
    with TestClient(local_app(tmp_path, api_base=server.base_url, use_cache=False)) as client:
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
