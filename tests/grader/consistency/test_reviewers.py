"""Reviewer calibration on the fixture set's gold with hand-built reviewer and model scores."""

from __future__ import annotations

import pytest

from grader.consistency.goldset import load_gold_set
from grader.consistency.report import ItemOutcome
from grader.consistency.reviewers import calibrate_reviewers
from grader.consistency.reviews import parse_reviews
from grader.consistency.stats import qwk
from grader.rubric import load_rubric
from tests.grader.consistency.conftest import mini_set

RUBRIC = load_rubric("nki-kernel-review")
GOLD = load_gold_set(mini_set(), RUBRIC)


def _csv() -> str:
    """ann copies gold exactly; bob is one level lower wherever gold is above 1 (so never exact)."""
    rows = ["reviewer,item,criterion,score"]
    for item in GOLD.items:
        for cid, label in item.labels.items():
            rows.append(f"ann,{item.id},{cid},{label.score}")
            bob = label.score if label.score == "not_applicable" else max(1, label.score - 1)
            rows.append(f"bob,{item.id},{cid},{bob}")
    return "\n".join(rows) + "\n"


def _model(shift: int) -> list[ItemOutcome]:
    out = []
    for item in GOLD.items:
        for cid, label in item.labels.items():
            if label.score == "not_applicable":
                out.append(ItemOutcome(item=item.id, criterion_id=cid, gold=label.score, status="not_applicable", reason="n/a"))
            else:
                out.append(ItemOutcome(item=item.id, criterion_id=cid, gold=label.score, status="scored",
                                       score=min(5, max(1, label.score + shift))))
    return out


@pytest.fixture(scope="module")
def rc():
    scores = parse_reviews(_csv(), GOLD, RUBRIC)
    return calibrate_reviewers(scores, GOLD, RUBRIC, _model(shift=-1), None, resamples=0, seed=1)


def test_each_reviewer_scored_against_gold_and_certified_per_criterion(rc):
    ann, bob = rc.reviewers
    assert (ann.reviewer, bob.reviewer, ann.items) == ("ann", "bob", 5)
    tiling_ann = next(c for c in ann.criteria if c.criterion_id == "tiling")
    assert tiling_ann.agreement.exact.value == 1.0 and tiling_ann.verdict.summary == "calibrated"
    assert ann.certified["tiling"] and not ann.certified["benchmarking"]  # one item with claims: n 1 < 5
    tiling_bob = next(c for c in bob.criteria if c.criterion_id == "tiling")
    assert tiling_bob.agreement.exact.value == 0.0 and not bob.certified["tiling"]
    assert "exact 0% < 50%" in tiling_bob.verdict.summary


def test_human_human_agreement_per_pair(rc):
    pair = next(p for p in rc.pairs if p.criterion_id == "precision")
    # Gold precision: 5, 5, 5, 5, 2 -> bob 4, 4, 4, 4, 1: never equal, always adjacent.
    assert (pair.a, pair.b, pair.n, pair.exact, pair.adjacent) == ("ann", "bob", 5, 0.0, 1.0)
    assert pair.qwk == pytest.approx(qwk([5, 5, 5, 5, 2], [4, 4, 4, 4, 1]))


def test_degradation_is_model_minus_mean_human(rc):
    d = next(x for x in rc.degradation if x.criterion_id == "precision")
    gold = [5, 5, 5, 5, 2]
    lower = [4, 4, 4, 4, 1]  # the model here is shifted like bob
    assert d.model_qwk == pytest.approx(qwk(gold, lower))
    assert d.human_qwk == pytest.approx((1.0 + qwk(gold, lower)) / 2)
    assert d.qwk == pytest.approx(d.model_qwk - d.human_qwk)
    assert d.model_exact == 0.0 and d.human_exact == 0.5 and d.exact == -0.5
    assert d.flagged == (d.qwk < -0.10)
    assert d.human_alpha is not None and d.human_alpha < 1.0
