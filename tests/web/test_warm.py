"""A started server has already paid the pages' one-time costs, so a reviewer's first draft page does
not: its templates are compiled and its rubric loaded at start-up; `grader serve` also freezes the
heap start-up leaves, so full collections stop walking it."""

from __future__ import annotations

import gc

import jinja2
from fastapi.testclient import TestClient

from grader import rubric
from grader.api.app import create_app
from grader.web import templating
from tests.web.conftest import csrf


def test_the_first_draft_page_compiles_no_template_and_loads_no_rubric(web, monkeypatch):
    eid = web.submit()
    templating.environment.cache_clear()  # as in a fresh process: nothing compiled, no rubric read
    rubric._load_cached.cache_clear()
    work: list[str] = []
    compile_, load = jinja2.Environment.compile, rubric.load_rubric_file
    monkeypatch.setattr(jinja2.Environment, "compile", lambda self, *a, **k: work.append("template") or compile_(self, *a, **k))
    monkeypatch.setattr(rubric, "load_rubric_file", lambda path: work.append(f"rubric {path.name}") or load(path))
    with TestClient(web.app, follow_redirects=False) as client:  # the lifespan warms the pages
        assert "template" in work and any(w.startswith("rubric ") for w in work)
        work.clear()
        login = client.get("/ui/login")
        assert client.post("/ui/login", data={"token": web.keys["reviewer"][1], "csrf": csrf(login.text)}).status_code == 303
        assert client.get(f"/ui/evaluations/{eid}").status_code == 200
    assert work == []


def test_only_the_serving_process_freezes_its_start_up_heap(web):
    before = gc.get_freeze_count()
    with TestClient(web.app):
        assert gc.get_freeze_count() == before  # tests and embedders keep collecting what they drop
    try:
        with TestClient(create_app(web.settings, web.store, settle=True)):
            assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()
