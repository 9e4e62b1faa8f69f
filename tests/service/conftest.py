"""Service fixtures: every store and API test runs against SQLite and a throw-away PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.api.app import create_app
from grader.service.worker import Worker
from grader.settings import Settings
from grader.store import migrate
from grader.store.db import Store, sqlite_url
from grader.store.keys import ROLES, Principal, create_key
from tests.conftest import EXAMPLES
from tests.fakes.postgres import PostgresUnavailable, TempPostgres

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def postgres() -> Iterator[TempPostgres]:
    try:
        server = TempPostgres().start()
    except (PostgresUnavailable, OSError) as exc:
        print(f"\nPostgreSQL tests skipped: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    yield server
    server.stop()


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "grader.db")
    return request.getfixturevalue("postgres").create_database()


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    s = Store(db_url)
    migrate.upgrade(s)
    yield s
    s.dispose()


@dataclass
class Caller:
    principal: Principal
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def callers(store: Store) -> dict[str, Caller]:
    """One key per role, plus a second reviewer ('reviewer2')."""
    out = {}
    for name, role in [(r, r) for r in ROLES] + [("reviewer2", "reviewer")]:
        key, token = create_key(store, name=name, role=role, created_by="test")
        out[name] = Caller(Principal(key.id, key.name, key.role), token)
    return out


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", job_lease_s=5, queue_max=50, max_wait_s=60, drafter="rules")


@pytest.fixture
def worker(store: Store, settings: Settings) -> Iterator[Worker]:
    """A worker running in a thread for the duration of the test."""
    w = Worker(store, settings, name="test-worker", poll_s=0.05)
    thread = threading.Thread(target=w.run, daemon=True)
    thread.start()
    yield w
    w.stop.set()
    thread.join(timeout=30)


@pytest.fixture
def client(store: Store, settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings, store)) as c:
        yield c


def upload(name: str = "matmul-tiled") -> dict:
    folder = EXAMPLES / name
    files = {p.name: p.read_text() for p in folder.iterdir() if p.is_file() and p.name != "submission.toml"}
    return {"manifest": (folder / "submission.toml").read_text(), "files": files}
