"""Fixtures for the reviewer pages: an app over a throw-away SQLite store, one key per role, and
finished evaluations that go through the real job path (submit, claim, finish) with drafts computed
once per session (the evidence pipeline is tested elsewhere; here it only costs time)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from evidence.submission import Submission
from grader.api.app import create_app
from grader.draft import Draft, Flag
from grader.evaluate import evaluate as real_evaluate
from grader.service import evaluations
from grader.service.worker import Worker
from grader.settings import Settings
from grader.store import migrate
from grader.store.db import Store, sqlite_url
from grader.store.keys import ROLES, Principal, create_key
from grader.submission import Limits, load_submission, submission_from_upload
from tests.conftest import EXAMPLES

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_DRAFTS: dict[str, Draft] = {}


def example_upload(name: str, edit: Callable[[dict[str, str]], None] | None = None) -> tuple[str, dict[str, str]]:
    folder = EXAMPLES / name
    files = {p.name: p.read_text() for p in folder.iterdir() if p.is_file() and p.name != "submission.toml"}
    if edit:
        edit(files)
    return (folder / "submission.toml").read_text(), files


def cached_evaluate(submission: Submission, **kwargs: object) -> Draft:
    """The real evaluation, once per distinct submission in the session."""
    if submission.content_hash not in _DRAFTS:
        _DRAFTS[submission.content_hash] = real_evaluate(submission, **kwargs)  # type: ignore[arg-type]
    return _DRAFTS[submission.content_hash]


@dataclass
class Web:
    store: Store
    settings: Settings
    app: object
    keys: dict[str, tuple[Principal, str]]  # name -> (principal, token)

    def client(self) -> TestClient:
        return TestClient(self.app, follow_redirects=False)  # type: ignore[arg-type]

    def sign_in(self, name: str) -> TestClient:
        c = self.client()
        page = c.get("/ui/login")
        response = c.post("/ui/login", data={"token": self.keys[name][1], "csrf": csrf(page.text), "next": "/ui/queue"})
        assert response.status_code == 303, response.text
        return c

    def submit(self, example: str = "softmax-ragged-defect", by: str = "submitter",
               edit: Callable[[dict[str, str]], None] | None = None,
               flag: str | None = None) -> str:
        """A finished evaluation of an example; `flag` adds that flag to kernel_correctness's draft."""
        manifest, files = example_upload(example, edit)
        view, _ = evaluations.submit(self.store, self.settings, self.keys[by][0], manifest, files)
        if flag:
            key = submission_from_upload(manifest, files, Limits()).content_hash
            _FLAGS[key] = flag
        Worker(self.store, self.settings, name="test-worker", poll_s=0.01).run(max_jobs=1)
        return view.id


_FLAGS: dict[str, str] = {}


def _evaluate_with_flags(submission: Submission, **kwargs: object) -> Draft:
    draft = cached_evaluate(submission, **kwargs)
    code = _FLAGS.pop(submission.content_hash, None)
    if code is None:
        return draft
    criteria = tuple(c.model_copy(update={"flags": (*c.flags, Flag(code=code, message=f"planted {code} for the test",
                                                                     evidence_id="sim.output:0"))})
                     if c.criterion_id == "kernel_correctness" else c for c in draft.criteria)
    return draft.model_copy(update={"criteria": criteria})


def csrf(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF token in the page"
    return found.group(1)


@pytest.fixture
def web(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Web]:
    monkeypatch.setattr(evaluations, "evaluate", _evaluate_with_flags)
    store = Store(sqlite_url(tmp_path / "grader.db"))
    migrate.upgrade(store)
    settings = Settings(data_dir=tmp_path / "data", drafter="rules", job_lease_s=30)
    keys = {}
    for name, role in [(r, r) for r in ROLES] + [("reviewer2", "reviewer")]:
        key, token = create_key(store, name=name, role=role, created_by="test")
        keys[name] = (Principal(key.id, key.name, key.role), token)
    yield Web(store, settings, create_app(settings, store), keys)
    store.dispose()


def folder_submission(name: str) -> Submission:
    return load_submission(EXAMPLES / name, Limits())
