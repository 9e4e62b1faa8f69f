"""The HTTP API through TestClient (auth off, embedded SQLite, an in-thread worker): same drafts as
the CLI, clear 4xx errors, keeps serving. The service's own tests are in tests/service."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from grader.api.app import create_app
from grader.cli import app as cli_app
from grader.service.worker import Worker
from grader.settings import Settings
from tests.conftest import EXAMPLE_NAMES, EXAMPLES


def local_app(tmp: Path, **settings: object):
    return create_app(Settings(data_dir=tmp, auth="off", **settings))


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    with TestClient(local_app(tmp_path_factory.mktemp("api"))) as c:
        w = Worker(c.app.state.store, c.app.state.settings, poll_s=0.05)
        thread = threading.Thread(target=w.run, daemon=True)
        thread.start()
        yield c
        w.stop.set()
        thread.join(30)


def upload(folder: Path) -> dict:
    manifest = (folder / "submission.toml").read_text()
    files = {p.name: p.read_text() for p in folder.iterdir() if p.is_file() and p.name != "submission.toml"}
    return {"manifest": manifest, "files": files}


def test_health_and_openapi(client):
    assert client.get("/healthz").json() == {"status": "ok"}
    spec = client.get("/openapi.json").json()
    assert "/v1/evaluations" in spec["paths"] and "/v1/rubrics/{rubric_id}" in spec["paths"]


def test_rubrics(client):
    listed = client.get("/v1/rubrics").json()
    assert listed[0]["id"] == "nki-kernel-review" and len(listed[0]["criteria"]) == 10
    shown = client.get("/v1/rubrics/nki-kernel-review").json()
    assert shown["criteria"][0]["id"] == "kernel_correctness"
    assert client.get("/v1/rubrics/nope").status_code == 404


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_api_draft_equals_cli_draft(client, name):
    response = client.post("/v1/evaluations?wait=60", json=upload(EXAMPLES / name))
    assert response.status_code == 200, response.text
    cli = CliRunner().invoke(cli_app, ["evaluate", str(EXAMPLES / name), "--format", "json"])
    assert cli.exit_code == 0
    assert response.json()["draft"] == json.loads(cli.stdout)


def test_manifest_as_json_object_is_accepted(client):
    body = upload(EXAMPLES / "matmul-tiled")
    import tomllib

    body["manifest"] = tomllib.loads(body["manifest"])
    assert client.post("/v1/evaluations", json=body).status_code == 202


@pytest.mark.parametrize(
    ("mutate", "status", "detail"),
    [
        (lambda b: b.update(manifest="[task\n"), 422, "submission.toml: invalid TOML"),
        (lambda b: b["files"].pop("kernel.py"), 422, "submission.toml: kernel.file: file 'kernel.py' not found"),
        (lambda b: b["files"].update({"kernel.py": "def (:\n"}), 422, "kernel.py:1: Python syntax error"),
        (lambda b: b.update(rubric="../etc/passwd"), 422, "unknown rubric"),
        (lambda b: b.pop("files"), 422, "body.files: missing required key"),
    ],
)
def test_bad_uploads_get_clear_4xx(client, mutate, status, detail):
    body = upload(EXAMPLES / "matmul-tiled")
    mutate(body)
    response = client.post("/v1/evaluations", json=body)
    assert response.status_code == status
    assert detail in response.json()["detail"]
    assert "\n" not in response.json()["detail"]
    assert client.get("/healthz").status_code == 200  # still serving


def test_oversize_file_is_413(tmp_path):
    client = TestClient(local_app(tmp_path, max_file_bytes=10_000))
    body = upload(EXAMPLES / "matmul-tiled")
    body["files"]["kernel.py"] += "# pad\n" * 3000
    response = client.post("/v1/evaluations", json=body)
    assert response.status_code == 413
    assert response.json()["detail"].startswith("kernel.py: ")


def test_oversize_body_is_413_before_parsing(tmp_path):
    client = TestClient(local_app(tmp_path, max_submission_bytes=50_000))
    response = client.post("/v1/evaluations", content=b"{" + b" " * 300_000 + b"}",
                           headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert "exceeds" in response.json()["detail"]
