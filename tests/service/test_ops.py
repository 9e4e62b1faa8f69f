"""Operations: readiness (database, migrations, sandbox), Prometheus metrics from the database, JSON
request logs carrying the request id."""

from __future__ import annotations

import json
import logging

from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.service.logs import JsonFormatter
from grader.store.db import Store
from tests.service.conftest import upload


def test_readyz_reports_database_migrations_and_sandbox(client):
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json()["status"] == "ready"
    assert set(r.json()["checks"]) == {"database", "migrations", "sandbox", "rubric_and_prompts"}
    assert client.get("/healthz").json() == {"status": "ok"}


def test_readyz_is_503_until_migrated(db_url, settings):
    store = Store(db_url)  # never upgraded
    with TestClient(create_app(settings, store)) as c:
        r = c.get("/readyz")
    assert r.status_code == 503 and not r.json()["checks"]["migrations"]["ok"]
    assert "at none" in r.json()["checks"]["migrations"]["detail"]


def test_metrics_count_jobs_latency_and_requests(client, callers, worker):
    client.post("/v1/evaluations?wait=60", json=upload(), headers=callers["submitter"].headers)
    text = client.get("/metrics").text
    assert 'grader_jobs{kind="evaluation",state="done"} 1.0' in text
    assert "grader_evaluation_latency_seconds_count 1.0" in text
    assert 'grader_http_requests_total{method="POST",route="/v1/evaluations",status="200"} 1.0' in text
    assert "grader_model_calls_total 0.0" in text


def test_request_logs_are_json_lines_with_the_request_id(client):
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(JsonFormatter().format(record))

    handler = Collect()
    logger = logging.getLogger("grader.http")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        r = client.get("/healthz", headers={"X-Request-ID": "trace-42"})
        bad = client.get("/healthz", headers={"X-Request-ID": "bad id; drop"})
    finally:
        logger.removeHandler(handler)
    assert r.headers["x-request-id"] == "trace-42"
    assert bad.headers["x-request-id"] != "bad id; drop" and len(bad.headers["x-request-id"]) == 32
    entries = [json.loads(line) for line in lines]
    assert entries[0]["request_id"] == "trace-42" and entries[0]["status"] == 200
    assert entries[0]["route"] == "/healthz" and entries[0]["method"] == "GET"
