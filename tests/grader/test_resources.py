"""Shipped rubrics and prompts, user directories layered over them, and the version / epoch."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import grader.resources as resources
from grader.api.app import create_app
from grader.cli import app
import grader.epoch as epoch_module
from grader.epoch import GraderEpoch, grader_epoch
from grader.errors import GraderError
from grader.prompting import load_templates
from grader.rubric import available_rubrics, load_rubric
from grader.settings import Settings
from grader.store import migrate
from grader.store.db import Store, sqlite_url
from grader.store.keys import create_key
from tests.conftest import EXAMPLES, ROOT

USER_RUBRICS = ROOT / "tests" / "data" / "rubrics"
runner = CliRunner()


def test_user_rubric_dir_is_searched_first_and_its_rubrics_load_by_id(monkeypatch):
    monkeypatch.setenv("GRADER_RUBRIC_PATH", str(USER_RUBRICS))
    listed = runner.invoke(app, ["rubric", "list"])
    assert listed.exit_code == 0, listed.output
    assert "quick-review" in listed.stdout and "nki-kernel-review" in listed.stdout
    result = runner.invoke(app, ["evaluate", str(EXAMPLES / "matmul-tiled"), "--rubric", "quick-review", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert [c["criterion_id"] for c in json.loads(result.stdout)["criteria"]] == ["works", "chip_fit", "claims_sound"]


def test_user_rubric_overrides_a_shipped_one_with_the_same_id(tmp_path):
    text = (USER_RUBRICS / "quick-review.toml").read_text().replace('id = "quick-review"', 'id = "nki-kernel-review"')
    (tmp_path / "nki-kernel-review.toml").write_text(text)
    dirs = Settings(rubric_path=str(tmp_path)).rubric_dirs()
    assert available_rubrics(dirs)["nki-kernel-review"] == tmp_path / "nki-kernel-review.toml"
    assert len(load_rubric("nki-kernel-review", dirs).criteria) == 3


def test_no_rubrics_found_is_an_error_naming_the_searched_paths(monkeypatch, tmp_path):
    monkeypatch.setattr(resources, "_CHECKOUT", tmp_path)  # as if installed without the package data
    monkeypatch.setenv("GRADER_RUBRIC_PATH", str(tmp_path / "mine"))
    result = runner.invoke(app, ["rubric", "list"])
    assert result.exit_code == 2
    assert "no rubrics found" in result.stderr and str(tmp_path / "mine") + " (missing)" in result.stderr
    unknown = runner.invoke(app, ["evaluate", str(EXAMPLES / "matmul-tiled")])
    assert unknown.exit_code == 2 and "unknown rubric 'nki-kernel-review'" in unknown.stderr
    assert str(tmp_path / "rubrics") in unknown.stderr


def test_prompt_override_dir_replaces_one_template_and_its_hash(tmp_path):
    shipped = load_templates(Settings().prompt_dirs())
    (tmp_path / "system.j2").write_text("Answer with care. Cite like [{{ example_id }}].\n{% include 'output_contract.j2' %}\n")
    mine = load_templates(Settings(prompt_path=str(tmp_path)).prompt_dirs())
    assert mine.hashes["system.j2"] != shipped.hashes["system.j2"]
    assert mine.hashes["criterion.j2"] == shipped.hashes["criterion.j2"]  # the rest still comes from the shipped set
    assert mine.env.get_template("system.j2").render(example_id="x", scores=[1], max_rationale_words=9).startswith("Answer")


def test_missing_prompt_templates_name_the_searched_dirs(monkeypatch, tmp_path):
    monkeypatch.setattr(resources, "_CHECKOUT", tmp_path)
    with pytest.raises(GraderError, match=r"prompt template 'system.j2' not found \(searched .*prompts \(missing\)\)"):
        load_templates(Settings().prompt_dirs())


def test_shipped_dir_prefers_package_data(monkeypatch, tmp_path):
    """In a wheel the folders are package data under grader/ (setup.py maps them); that copy wins."""
    (tmp_path / "rubrics").mkdir()
    monkeypatch.setattr(resources, "files", lambda package: tmp_path)
    assert resources.shipped_dir("rubrics") == tmp_path / "rubrics"
    assert resources.shipped_dir("prompts") == resources._CHECKOUT / "prompts"


def test_version_prints_package_version_and_epoch_parts():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("nki-grader ") and lines[1].startswith("epoch epoch:")
    parts = dict(line.split(None, 1) for line in lines[2:])
    assert {"grader", "rubric", "rubric_hash", "prompts", "simulator", "static_rules"} <= set(parts)
    assert parts["rubric"].startswith("nki-kernel-review@") and "sha256:" in parts["simulator"]


def test_epoch_tracks_simulator_rule_cost_and_error_model_sources(monkeypatch):
    base = grader_epoch()
    assert base.parts["grader"] and base.parts["static_rules"].startswith("nki-static@")
    monkeypatch.setattr(epoch_module, "source_hash", lambda package: f"sha256:changed-{package}")
    changed = grader_epoch()
    assert changed.parts["simulator"] != base.parts["simulator"] and changed.hash != base.hash
    for part in ("static_rules", "cost_model", "numerics"):
        assert changed.parts[part] != base.parts[part], part
    run = base.extend(drafter="llm@1.0.0", model="openai/x")
    assert run.parts["model"] == "openai/x" and run.hash != base.hash
    assert GraderEpoch(parts=dict(run.parts)).hash == run.hash  # the hash is a function of the parts only


def _client(tmp_path, settings: Settings) -> tuple[TestClient, dict[str, str]]:
    store = Store(sqlite_url(tmp_path / "grader.db"))
    migrate.upgrade(store)
    _, token = create_key(store, name="t", role="submitter", created_by="test")
    return TestClient(create_app(settings, store)), {"Authorization": f"Bearer {token}"}


def test_readiness_fails_when_the_default_rubric_cannot_be_loaded(tmp_path):
    ok, _ = _client(tmp_path, Settings(data_dir=tmp_path))
    assert ok.get("/readyz").json()["checks"]["rubric_and_prompts"]["ok"] is True
    broken, _ = _client(tmp_path / "b", Settings(data_dir=tmp_path, rubric="missing-rubric"))
    response = broken.get("/readyz")
    check = response.json()["checks"]["rubric_and_prompts"]
    assert response.status_code == 503 and "unknown rubric 'missing-rubric'" in check["detail"]


def test_api_lists_rubrics_of_the_configured_path(tmp_path):
    client, auth = _client(tmp_path, Settings(data_dir=tmp_path, rubric_path=str(USER_RUBRICS)))
    assert {r["id"] for r in client.get("/v1/rubrics", headers=auth).json()} == {"quick-review", "nki-kernel-review"}
    assert client.get("/v1/rubrics/quick-review", headers=auth).json()["criteria"][0]["id"] == "works"
    missing = client.get("/v1/rubrics/nope", headers=auth)
    assert missing.status_code == 404 and str(USER_RUBRICS) in missing.json()["detail"]


def test_rule_effects_are_worded_once_for_cli_prompts_drafter_and_guards():
    from grader.drafting.guards import evidence_flags
    from grader.prompting import describe_rule
    from grader.reports.rubric import render_rubric
    from tests.fakes import llm_case as case

    rubric = case.rubric()
    rule = rubric.criterion("kernel_correctness").rules[0]
    assert rule.effect == "score at most 2"
    assert f"({rule.effect}): {rule.description}" in render_rubric(rubric)
    assert describe_rule(rule).endswith(f"-> {rule.effect}")
    (flag,) = [f for f in evidence_flags(rubric.criterion("kernel_correctness"), case.bundle(), 4)
               if rule.id in f.message]
    assert f"({rule.effect}: {rule.description})" in flag.message
