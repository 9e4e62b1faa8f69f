"""Calibrated confidence of rules drafts: the agreement rate with gold of drafts reached the same way."""

from __future__ import annotations

import pytest

from grader.drafting import confidence as conf
from grader.drafting.rules import RulesDrafter
from grader.rubric import load_rubric
from tests.grader.test_rules_drafter import KERNEL_FACT, MATCHING, bundle, item, submission

FAILING = item("sim.output:0", "sim.output", metrics={"matches": 0.0, "mismatch_fraction": 0.5, "nan_count": 0.0})


def test_a_cell_estimates_its_own_agreement_rate_shrunk_towards_its_state():
    rows = [("a", "supported", i < 90) for i in range(100)] + [("b", "supported", True)] * 2
    table = conf.fit(rows)
    assert table["criteria"]["a"]["supported"] == [90, 100]
    assert table["states"]["supported"] == [92, 102]
    assert conf.estimate(table, "a", "supported") == pytest.approx(0.9, abs=0.005)
    # a criterion never seen in this state: the state's pooled (Laplace-smoothed) rate
    assert conf.estimate(table, "c", "supported") == pytest.approx(93 / 104, abs=0.001)
    # a state never seen at all: an even chance, not certainty
    assert conf.estimate(table, "a", "conflict") == 0.5


def test_calibration_error_is_zero_when_confidence_matches_the_hit_rate():
    assert conf.calibration_error([(0.9, True)] * 9 + [(0.9, False)]) == pytest.approx(0.0)
    assert conf.calibration_error([(0.95, False)] * 4 + [(0.55, True)] * 4) == pytest.approx(0.7)
    assert conf.calibration_error([]) == 0.0


@pytest.fixture
def table(monkeypatch):
    """A fitted table where correct-looking drafts of kernel_correctness were often wrong and capped ones never."""
    fitted = conf.fit([("kernel_correctness", "supported", i < 3) for i in range(10)]
                      + [("kernel_correctness", "capped_measured", True)] * 10)
    monkeypatch.setattr(conf, "load_table", lambda rubric_id: fitted)
    return fitted


def test_rules_drafts_take_the_confidence_of_their_state_from_the_table(table):
    supported = RulesDrafter().draft(submission(), bundle(MATCHING, KERNEL_FACT), load_rubric()).criterion("kernel_correctness")
    capped = RulesDrafter().draft(submission(), bundle(FAILING, KERNEL_FACT), load_rubric()).criterion("kernel_correctness")
    assert (supported.score, capped.score) == (5, 2)
    assert supported.confidence == conf.estimate(table, "kernel_correctness", "supported") < 0.5
    assert capped.confidence == conf.estimate(table, "kernel_correctness", "capped_measured") > 0.9


def test_without_a_table_confidence_is_the_basis_coverage(monkeypatch):
    monkeypatch.setattr(conf, "load_table", lambda rubric_id: None)
    c = RulesDrafter().draft(submission(), bundle(MATCHING, KERNEL_FACT), load_rubric()).criterion("kernel_correctness")
    covered = 1 / len(load_rubric().criterion("kernel_correctness").basis)
    assert c.confidence == round(0.5 + 0.5 * covered, 3)


def test_the_shipped_table_belongs_to_the_rubric_it_sits_beside():
    """`evals/fit_confidence.py` wrote it; a renamed criterion or state would silently fall back to the pooled rate."""
    conf.load_table.cache_clear()
    table = conf.load_table("nki-kernel-review")
    assert table is not None and table["rubric"] == "nki-kernel-review"
    assert set(table["criteria"]) <= {c.id for c in load_rubric().criteria}
    assert set(table["states"]) <= set(conf.STATES)
    assert table["ece_leave_one_out"] <= 0.05
    assert table["rubric_hash"] == load_rubric().content_hash, (
        "the rubric changed since its confidence table was fitted: run `.venv/bin/python evals/fit_confidence.py`")
