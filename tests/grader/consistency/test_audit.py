"""Audits of the rules drafter on the fixture set: perturbation invariance, injection, drift."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from grader.cli import app
from grader.consistency.audit import drift, run_audit
from grader.consistency.executor import LocalExecutor
from grader.consistency.store import JsonFileStore, load_report_file
from grader.rubric import load_rubric
from grader.settings import Settings
from tests.grader.consistency.conftest import mini_set

RUBRIC = load_rubric("nki-kernel-review")
SETTINGS = Settings(drafter="rules")


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    store = JsonFileStore(tmp_path_factory.mktemp("store"))
    return run_audit(mini_set(), settings=SETTINGS, executor=LocalExecutor(2), resamples=0, store=store), store


@pytest.mark.slow
def test_rules_drafter_is_invariant_and_injection_safe(audited):
    report, _ = audited
    assert not report.errors and report.graded_variants == 5 * 3 + 1  # reorder applies to one item only
    for row in report.perturbation:
        assert row.rate == 1.0, row
        assert row.n + row.not_applicable == 5
    reorder = [r for r in report.perturbation if r.perturbation == "reorder"]
    assert {(r.n, r.not_applicable) for r in reorder} == {(1, 4)}  # only softmax-masked has two functions
    assert [r.item for r in report.injection] == [i.item for i in report.items]
    assert all(r.detected and not r.raised for r in report.injection)
    assert report.invariant and report.injection_safe and report.passed
    assert report.drift is None  # nothing earlier in a fresh store


@pytest.mark.slow
def test_drift_against_the_stored_audit_and_a_report_file(audited, tmp_path):
    first, store = audited
    second = run_audit(mini_set(), settings=SETTINGS, perturbations=(), resamples=0, store=store)  # newest audit of the set
    d = second.drift
    assert d is not None and d.against == first.id and d.same_epoch and not d.changes
    assert all(r.changed == 0 and r.n == 5 for r in d.rows)
    assert next(r for r in d.rows if r.criterion_id == "kernel_correctness").exact == 1.0
    path = tmp_path / "first.json"
    path.write_text(first.model_dump_json())
    assert load_report_file(path) == first
    third = run_audit(mini_set(), settings=SETTINGS, perturbations=(), resamples=0, against=str(path))
    assert third.drift.against == first.id and not third.drift.changes


def test_drift_counts_changes_and_qwk_between_epochs(audited):
    report, _ = audited
    outcomes = list(report.outcomes)
    moved = [o.model_copy(update={"score": 1}) if o.criterion_id == "tiling" and o.status == "scored" and o.score != 1 else o
             for o in outcomes]
    d = drift(report, moved, RUBRIC, "epoch:later")
    tiling = next(r for r in d.rows if r.criterion_id == "tiling")
    assert not d.same_epoch and tiling.changed == sum(1 for a, b in zip(outcomes, moved) if a != b) > 0
    assert {c.criterion_id for c in d.changes} == {"tiling"} and all(c.after == 1 for c in d.changes)
    assert all(r.changed == 0 for r in d.rows if r.criterion_id != "tiling")


def test_cli_audit_bad_input(tmp_path):
    result = CliRunner().invoke(app, ["audit", str(mini_set()), "--against", str(tmp_path / "nope.json"), "--no-store"])
    assert result.exit_code == 2 and "nope.json" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    result = CliRunner().invoke(app, ["audit", str(mini_set()), "--against", "epoch:0000", "--no-store"])
    assert result.exit_code == 2 and "needs the run store" in result.stderr
    result = CliRunner().invoke(app, ["audit", str(mini_set()), "--perturbation", "shuffle", "--no-store"])
    assert result.exit_code == 2 and "unknown perturbation" in result.stderr
