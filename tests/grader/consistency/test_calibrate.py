"""Calibration runs of the rules drafter over the fixture set: the report agrees with `evaluate`,
its statistics are those of its own outcomes, gates and the store behave, the CLI exits as documented."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from grader.cli import app
from grader.consistency.calibrate import calibration_epoch, measure, run_calibration
from grader.consistency.store import JsonFileStore
from grader.evaluate import evaluate
from grader.rubric import load_rubric
from grader.settings import Settings
from tests.grader.consistency.conftest import mini_set

RUBRIC = load_rubric("nki-kernel-review")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    store = JsonFileStore(tmp_path_factory.mktemp("store"))
    report = run_calibration(mini_set(), settings=Settings(drafter="rules"), resamples=100, store=store)
    return report, store


def test_outcomes_are_what_evaluate_drafts(run):
    report, _ = run
    assert [i.item for i in report.items] == ["matmul-hoisted", "matmul-reload", "rmsnorm-port", "softmax-masked", "softmax-ragged"]
    assert not any(i.error for i in report.items)
    draft = evaluate(mini_set() / "softmax-ragged", settings=Settings(drafter="rules"))
    for c in draft.criteria:
        o = next(o for o in report.outcomes if o.item == "softmax-ragged" and o.criterion_id == c.criterion_id)
        assert (o.status, o.score, o.rationale) == (c.status, c.score, c.rationale)
    assert len(report.outcomes) == 5 * len(RUBRIC.criteria)
    gold = {o.criterion_id: o.gold for o in report.outcomes if o.item == "rmsnorm-port"}
    assert gold["benchmarking"] == 2 and gold["migration_fidelity"] == 4


def test_statistics_are_those_of_the_outcomes(run):
    report, _ = run
    per, overall = measure(list(report.outcomes), RUBRIC, None, resamples=100, seed=20260)
    assert tuple(per) == report.criteria and overall == report.overall
    tiling = report.criterion("tiling")
    pairs = [(o.gold, o.score) for o in report.outcomes if o.criterion_id == "tiling" and o.score is not None]
    assert tiling.agreement.n == len(pairs) == 5
    assert tiling.agreement.exact.value == sum(g == s for g, s in pairs) / 5
    # Two items with claims/CUDA only: those criteria cannot pass min_items, and the run fails.
    assert report.criterion("benchmarking").verdict.summary == "failed gate: n 1 < 5 scored gold items"
    assert not report.passed
    assert report.overall.agreement.n == sum(c.agreement.n for c in report.criteria)


def test_run_records_its_epoch_and_is_stored(run):
    report, store = run
    epoch = calibration_epoch(RUBRIC, Settings(drafter="rules"))
    assert report.epoch == epoch and epoch.parts["drafter"].startswith("rules@")
    assert store.latest_run(epoch.hash, RUBRIC.id) == report
    assert store.get_run(report.id) == report
    assert [s.id for s in store.list_runs(epoch=epoch.hash)] == [report.id]
    assert store.latest_run("epoch:other", RUBRIC.id) is None
    llm = calibration_epoch(RUBRIC, Settings(drafter="llm", model="openai/x", temperature=0.3))
    assert llm.hash != epoch.hash and llm.parts["model"] == "openai/x" and "temperature=0.3" in llm.parts["params"]


def test_gate_overrides_change_verdicts_not_figures(run):
    report, _ = run
    per, _ = measure(list(report.outcomes), RUBRIC, {"min_items": 1, "qwk_min": -1.0}, resamples=0, seed=1)
    bench = next(c for c in per if c.criterion_id == "benchmarking")
    assert bench.gates.min_items == 1 and "n 1 <" not in bench.verdict.summary
    assert [c.agreement.exact.value for c in per] == [c.agreement.exact.value for c in report.criteria]


def test_disagreements_sorted_by_distance(run):
    report, _ = run
    worst = report.disagreements(limit=50)
    assert worst and all(o.distance for o in worst)
    assert [o.distance for o in worst] == sorted((o.distance for o in worst), reverse=True)


@pytest.mark.slow
def test_cli_writes_json_and_html_with_reviewers_and_exits_1_when_a_gate_fails(tmp_path):
    out, html, reviews = tmp_path / "report.json", tmp_path / "report.html", tmp_path / "reviews.csv"
    rows = ["reviewer,item,criterion,score"]
    for item in ("matmul-reload", "softmax-ragged", "softmax-masked"):
        rows += [f"ann,{item},kernel_correctness,{5 if item != 'softmax-ragged' else 2}", f"ann,{item},tiling,4"]
    reviews.write_text("\n".join(rows) + "\n")
    result = CliRunner().invoke(app, ["calibrate", str(mini_set()), "--resamples", "50", "--workers", "2",
                                      "-o", str(out), "--html", str(html), "--reviewers", str(reviews), "--no-store"])
    assert result.exit_code == 1, result.output
    assert "benchmarking: failed gate: n 1 < 5 scored gold items" in result.stdout
    assert "gates FAIL" in result.stdout and "overall" in result.stdout
    assert "Reviewer certification (reviews.csv)" in result.stdout and "Degradation" in result.stdout
    data = json.loads(out.read_text())
    assert data["kind"] == "calibration" and data["workers"] == 2 and len(data["criteria"]) == len(RUBRIC.criteria)
    ann = data["reviewers"]["reviewers"][0]
    assert ann["reviewer"] == "ann" and ann["items"] == 3
    correctness = next(c for c in ann["criteria"] if c["criterion_id"] == "kernel_correctness")
    assert correctness["agreement"]["exact"]["value"] == 1.0  # ann matches gold on correctness
    assert correctness["verdict"]["summary"] == "failed gate: n 3 < 5 scored gold items"  # but graded too few
    page = html.read_text()
    assert "Reviewer certification (reviews.csv)" in page and "data:image/png;base64," in page


def _invoke(*args):
    result = CliRunner().invoke(app, ["calibrate", *map(str, args), "--no-store"])
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    return result.exit_code, lines


def test_cli_bad_input_is_one_line_and_exit_2(mini_copy, tmp_path):
    (tmp_path / "empty").mkdir()
    code, lines = _invoke(tmp_path / "empty")
    assert code == 2 and len(lines) == 1 and "no items" in lines[0]

    reviews = tmp_path / "reviews.csv"
    reviews.write_text("reviewer,item,criterion,score\nann,matmul-reload,tiling,4\nann,matmul-reload,tiling\n")
    code, lines = _invoke(mini_set(), "--reviewers", reviews)
    assert code == 2 and lines == ["error: reviews.csv:3: expected 4 columns (reviewer,item,criterion,score), got 3"]
    reviews.write_text("reviewer,item,criterion,score\nann,ghost,tiling,4\n")
    code, lines = _invoke(mini_set(), "--reviewers", reviews)
    assert code == 2 and lines == ["error: reviews.csv:2: unknown item 'ghost' (not in set mini-set)"]

    code, lines = _invoke(mini_set(), "--gate", "qwk=0.5")
    assert code == 2 and len(lines) == 1 and "qwk" in lines[0]

    gold = mini_copy / "softmax-ragged" / "gold.toml"
    gold.write_text(gold.read_text().replace("[criteria.tiling]\nscore = 3", "[criteria.tiling]\nscore = 0"))
    code, lines = _invoke(mini_copy)
    assert code == 2 and lines == ['error: softmax-ragged/gold.toml:7: criteria.tiling.score = 0 is outside 1-5 (or "not_applicable")']
    gold.unlink()
    code, lines = _invoke(mini_copy)
    assert code == 2 and lines == [f"error: {mini_copy}/softmax-ragged: item has no gold.toml"]


def test_calibration_and_audits_find_rubrics_on_the_settings_search_path(tmp_path, monkeypatch):
    # `grader evaluate` looks rubrics up on Settings.rubric_dirs() (GRADER_RUBRIC_PATH, then the shipped
    # ones); calibration runs, audits and the service's run requests must find the same ones
    from grader.consistency.audit import run_audit
    from grader.errors import GraderError
    from grader.errors import RubricError
    from grader.rubric import available_rubrics
    from grader.service.errors import Invalid
    from grader.service.run_jobs import checked_rubric

    monkeypatch.delenv("GRADER_RUBRIC_PATH", raising=False)
    user = tmp_path / "rubrics"
    user.mkdir()
    shipped = available_rubrics(Settings().rubric_dirs())["nki-kernel-review"].read_text()
    (user / "team-review.toml").write_text(shipped.replace('id = "nki-kernel-review"', 'id = "team-review"', 1))
    empty = tmp_path / "empty-set"
    empty.mkdir()
    mine, default = Settings(drafter="rules", rubric_path=str(user)), Settings(drafter="rules")

    assert checked_rubric("team-review", mine) == "team-review"
    with pytest.raises(Invalid, match="unknown rubric 'team-review'"):
        checked_rubric("team-review", default)
    for run_set in (run_calibration, run_audit):
        with pytest.raises(GraderError, match="no items"):  # the rubric resolved; the (empty) set is what fails
            run_set(empty, rubric="team-review", settings=mine)
        with pytest.raises(RubricError, match="unknown rubric 'team-review'"):
            run_set(empty, rubric="team-review", settings=default)
