"""Counting not_applicable / unscored / missing gold, and gate verdicts, on hand-built outcomes."""

from __future__ import annotations

import pytest

from grader.consistency.compare import compare
from grader.consistency.gates import judge
from grader.consistency.stats import agreement
from grader.rubric import Gates, load_rubric

LABELS = [1, 2, 3, 4, 5]


def test_counts_every_combination():
    pairs = [(5, 5), (4, 3), (2, 2), (3, "unscored"), ("not_applicable", "not_applicable"),
             ("not_applicable", 4), (4, "not_applicable"), (None, 5)]
    c = compare("tiling", pairs, Gates(), labels=LABELS, resamples=0)
    assert c.n_items == 8 and c.no_gold == 1
    assert c.agreement.n == 3  # (5,5) (4,3) (2,2): both scored
    assert c.gold_not_applicable == 2 and c.rater_not_applicable == 2
    # Agree on applicability: (5,5) (4,3) (2,2) (3,unscored) (na,na) = 5 of 7 with gold.
    assert c.applicability_agreement == pytest.approx(5 / 7)
    # Unscored over gold-applicable items: 1 of 5.
    assert (c.unscored, c.unscored_rate) == (1, pytest.approx(1 / 5))


def test_gate_verdict_names_each_failure():
    a = agreement([1, 2, 3, 4, 5, 3], [2, 3, 4, 5, 5, 4], resamples=0)  # every draft one level high but one
    v = judge(a, unscored_rate=0.2, gates=Gates())
    assert not v.passed
    failed = [c.gate for c in v.checks if not c.passed]
    assert failed == ["smd_max", "exact_min", "unscored_max"]
    assert v.summary.startswith("failed gate: |SMD| ")
    assert "exact 17% < 50%" in v.summary and "unscored 20% > 10%" in v.summary
    loose = Gates(smd_max=2, exact_min=0.1, unscored_max=0.5)
    assert judge(a, unscored_rate=0.2, gates=loose).summary == "calibrated"


def test_too_few_items_and_undefined_figures_fail():
    assert judge(agreement([3, 4], [3, 4], resamples=0), 0.0, Gates()).summary == "failed gate: n 2 < 5 scored gold items"
    const = judge(agreement([4] * 6, [4] * 6, resamples=0), 0.0, Gates())
    assert "QWK undefined (gold or drafted scores constant)" in const.summary and not const.passed


def test_gates_come_from_the_rubric_with_overrides():
    rubric = load_rubric("nki-kernel-review")
    assert rubric.gates == Gates()  # the shipped rubric states the field's defaults explicitly
    assert rubric.gates_for("tiling", {"qwk_min": 0.6}).qwk_min == 0.6
    crit = rubric.criterion("tiling").model_copy(update={"gates": {"exact_min": 0.4}})
    custom = rubric.model_copy(update={"criteria": (crit,)})
    assert custom.gates_for("tiling").exact_min == 0.4 and custom.gates_for("tiling").qwk_min == 0.7
