"""A second rubric with other criterion ids works end to end with both drafters (a rubric is one TOML file)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from grader.cli import app
from grader.rubric import load_rubric
from tests.conftest import EXAMPLES, ROOT
from tests.fakes.openai_server import FakeOpenAIServer
from tests.grader.test_llm_wiring import cite_first_listed

QUICK = ROOT / "tests" / "data" / "rubrics" / "quick-review.toml"
runner = CliRunner()


def test_quick_review_loads_with_its_own_ids():
    rubric = load_rubric(str(QUICK))
    assert [c.id for c in rubric.criteria] == ["works", "chip_fit", "claims_sound"]


def test_rules_drafter_scores_the_quick_review_from_its_rules():
    result = runner.invoke(app, ["evaluate", str(EXAMPLES / "softmax-ragged-defect"), "--rubric", str(QUICK),
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    draft = json.loads(result.stdout)
    assert draft["rubric"]["id"] == "quick-review"
    by_id = {c["criterion_id"]: c for c in draft["criteria"]}
    assert list(by_id) == ["works", "chip_fit", "claims_sound"]
    works = by_id["works"]
    # The ragged tail is never written: the rubric's own rules cap "works" (mismatch at 2, no mask at 3).
    assert works["status"] == "scored" and works["score"] == 2, works
    assert "mismatch" in works["rationale"] or "mismatches" in works["rationale"]
    assert by_id["chip_fit"]["status"] == "scored"
    assert by_id["claims_sound"]["status"] == "not_applicable"  # the example states no claims


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with FakeOpenAIServer(default=cite_first_listed) as srv:
        yield srv


def test_llm_drafter_drafts_the_quick_review(server):
    result = runner.invoke(app, [
        "evaluate", str(EXAMPLES / "rmsnorm-cuda-port"), "--rubric", str(QUICK), "--format", "json",
        "--drafter", "llm", "--model", "openai/fake-judge", "--api-base", server.base_url, "--no-cache",
    ])
    assert result.exit_code == 0, result.output
    draft = json.loads(result.stdout)
    by_id = {c["criterion_id"]: c for c in draft["criteria"]}
    assert list(by_id) == ["works", "chip_fit", "claims_sound"]
    assert all(c["status"] == "scored" and c["score"] == 3 for c in by_id.values()), by_id
    asked = [m["content"] for r in server.requests for m in r["body"]["messages"] if m["role"] == "user"]
    assert sorted(line for text in asked for line in text.splitlines() if line.startswith("Criterion id:")) == [
        "Criterion id: chip_fit", "Criterion id: claims_sound", "Criterion id: works"]
    # The prompt for a criterion shows only the kinds the quick rubric lets it cite.
    claims_prompt = next(text for text in asked if "Criterion id: claims_sound" in text)
    assert "] claims.claim |" in claims_prompt and "] sim.trace |" not in claims_prompt
