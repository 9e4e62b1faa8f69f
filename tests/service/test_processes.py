"""Real `grader serve` processes with worker processes, on both databases: a worker killed with
SIGKILL mid-job loses nothing and duplicates nothing; a server stopped with jobs queued picks them up
after a restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from grader.store.keys import create_key
from grader.store.models import AuditEntry, DraftRow, Job
from tests.fakes.postgres import _free_port
from tests.service.conftest import upload

pytestmark = pytest.mark.slow(minutes=2)
EXAMPLE_CYCLE = ["matmul-tiled", "softmax-ragged-defect", "rmsnorm-cuda-port"]


class Server:
    def __init__(self, db_url: str, data_dir: Path, workers: int) -> None:
        self.port = _free_port()
        env = {**os.environ, "GRADER_DATABASE_URL": db_url, "GRADER_DATA_DIR": str(data_dir), "GRADER_AUTH": "on",
               "GRADER_JOB_LEASE_S": "3", "GRADER_SHUTDOWN_GRACE_S": "20", "GRADER_DRAFTER": "rules",
               "GRADER_EVIDENCE_CACHE": "0"}  # jobs do their real work, so there is a job to kill mid-way
        self.log = open(data_dir / f"serve-{self.port}.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "grader.cli", "serve", "--port", str(self.port),
                                      "--workers", str(workers)], env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert self.proc.poll() is None, f"server exited: {(data_dir / f'serve-{self.port}.log').read_text()[-2000:]}"
            time.sleep(0.2)
        raise AssertionError("server did not become ready")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)
        self.log.close()


def submit_many(base: str, token: str, n: int) -> list[str]:
    with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        ids = []
        for i in range(n):
            r = client.post("/v1/evaluations", json=upload(EXAMPLE_CYCLE[i % 3]))
            assert r.status_code == 202, r.text
            ids.append(r.json()["id"])
        return ids


def wait_all_finished(store, ids: list[str], timeout: float = 180) -> dict[str, str]:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with store.read() as s:
            states = dict(s.execute(select(Job.id, Job.state).where(Job.id.in_(ids))).all())
        if all(v in ("done", "failed") for v in states.values()):
            return states
        time.sleep(0.3)
    raise AssertionError(f"not finished: {Counter(states.values())}")


def assert_exactly_once(store, ids: list[str]) -> None:  # type: ignore[no-untyped-def]
    with store.read() as s:
        drafts = Counter(s.scalars(select(DraftRow.job_id).where(DraftRow.job_id.in_(ids))))
        done_entries = Counter(s.scalars(select(AuditEntry.subject).where(AuditEntry.action == "job.done")))
    assert set(drafts) == set(ids) and set(drafts.values()) == {1}
    assert all(done_entries[f"job:{i}"] == 1 for i in ids)


def test_killed_worker_loses_and_duplicates_nothing(store, db_url, tmp_path):
    _, token = create_key(store, name="fault", role="admin")
    server = Server(db_url, tmp_path, workers=2)
    try:
        ids = submit_many(server.base, token, 10)  # about 15 s of real work on 2 workers: time to kill one mid-job
        victims: list[str] = []
        deadline = time.monotonic() + 60
        while not victims and time.monotonic() < deadline:
            with store.read() as s:
                running = s.execute(select(Job.id, Job.worker).where(Job.state == "running", Job.worker.is_not(None))).first()
            if running is None:
                time.sleep(0.05)
                continue
            try:
                os.kill(int(running.worker.rsplit(":", 1)[1]), signal.SIGKILL)
            except ProcessLookupError:  # that worker already ended; its job is re-queued below
                pass
            # Kill once, then wait for the re-queue: under load the supervisor may take seconds to
            # notice, and killing "the worker of a running job" again would target a dead pid.
            requeue_deadline = time.monotonic() + 30
            while time.monotonic() < requeue_deadline:
                with store.read() as s:
                    interrupted = s.scalars(select(AuditEntry.subject).where(
                        AuditEntry.subject == f"job:{running.id}", AuditEntry.action == "job.requeued")).first()
                if interrupted:
                    victims.append(running.id)
                    break
                time.sleep(0.2)
        assert victims, "no worker was killed mid-job"
        states = wait_all_finished(store, ids)
        assert set(states.values()) == {"done"}
        assert_exactly_once(store, ids)
        with store.read() as s:
            assert s.get(Job, victims[0]).attempts == 2
        # The supervisor replaced the killed worker.
        import psutil

        assert len(psutil.Process(server.proc.pid).children()) == 2
    finally:
        server.stop()


def test_restart_completes_queued_jobs(store, db_url, tmp_path):
    _, token = create_key(store, name="restart", role="admin")
    first = Server(db_url, tmp_path, workers=1)
    ids = submit_many(first.base, token, 8)
    first.stop()  # graceful: the running job finishes, queued ones stay queued
    with store.read() as s:
        states = Counter(s.scalars(select(Job.state).where(Job.id.in_(ids))))
    assert states["running"] == 0 and states["queued"] >= 1, states
    second = Server(db_url, tmp_path, workers=2)
    try:
        assert set(wait_all_finished(store, ids).values()) == {"done"}
        assert_exactly_once(store, ids)
    finally:
        second.stop()
