"""Reviewer calibration: humans scored against gold with the drafter's statistics and gates.

Each reviewer gets per-criterion agreement with gold and a certification verdict from the gates
(the same gates the drafter must pass). Reviewers are compared with each other on the items both
scored (exact, adjacent, QWK per pair; Krippendorff's ordinal alpha over all of them), and the
drafter's degradation is model-gold minus mean human-gold agreement, measured on the items the
reviewers graded, so both sides face the same items.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence

import numpy as np

from grader.consistency import stats
from grader.consistency.compare import Outcome, compare
from grader.consistency.goldset import GoldSet
from grader.consistency.report import (Degradation, ItemOutcome, PairAgreement, ReviewerCalibration,
                                       ReviewerReport)
from grader.consistency.reviews import ReviewerScore
from grader.rubric import Gates, Rubric


def _mean(values: Sequence[float | None]) -> float | None:
    defined = [v for v in values if v is not None]
    return statistics.fmean(defined) if defined else None


def _diff(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def calibrate_reviewers(scores: list[ReviewerScore], gold: GoldSet, rubric: Rubric, model: list[ItemOutcome],
                        gate_overrides: dict[str, float] | None, resamples: int, seed: int,
                        source: str = "reviews.csv") -> ReviewerCalibration:
    labels = list(range(rubric.scale_min, rubric.scale_max + 1))
    by_key: dict[tuple[str, str, str], Outcome] = {(s.reviewer, s.item, s.criterion): s.score for s in scores}
    names = sorted({s.reviewer for s in scores})
    graded = {r: sorted({s.item for s in scores if s.reviewer == r}) for r in names}
    gold_of = {(i.id, c): lbl.score for i in gold.items for c, lbl in i.labels.items()}
    overall_gates = Gates.model_validate({**rubric.gates.model_dump(), **(gate_overrides or {})})

    reports = []
    for r in names:
        per, pooled = [], []
        for crit in rubric.criteria:
            pairs = [(gold_of.get((item, crit.id)), by_key[(r, item, crit.id)]) for item in graded[r]]
            pooled += pairs
            per.append(compare(crit.id, pairs, rubric.gates_for(crit.id, gate_overrides), labels=labels,
                               resamples=resamples, seed=seed))
        overall = compare("overall", pooled, overall_gates, labels=labels, resamples=resamples, seed=seed)
        reports.append(ReviewerReport(reviewer=r, items=len(graded[r]), criteria=tuple(per), overall=overall))

    pairs_out = []
    for a, b in itertools.combinations(names, 2):
        shared = sorted(set(graded[a]) & set(graded[b]))
        for crit in rubric.criteria:
            both = [(by_key[(a, i, crit.id)], by_key[(b, i, crit.id)]) for i in shared]
            both = [(x, y) for x, y in both if isinstance(x, int) and isinstance(y, int)]
            ga, gb = np.array([x for x, _ in both], float), np.array([y for _, y in both], float)
            defined = stats.defined
            pairs_out.append(PairAgreement(
                a=a, b=b, criterion_id=crit.id, n=len(both),
                exact=defined(stats.exact(ga, gb)) if both else None,
                adjacent=defined(stats.adjacent(ga, gb)) if both else None,
                qwk=defined(stats.qwk(ga, gb, labels)) if both else None,
            ))

    reviewed = sorted({s.item for s in scores})
    model_of = {(o.item, o.criterion_id): o for o in model}
    degradation = []
    for k, crit in enumerate(rubric.criteria):
        model_pairs = [(gold_of.get((i, crit.id)), model_of[(i, crit.id)]) for i in reviewed]
        model_pairs = [(g, o.score) for g, o in model_pairs if isinstance(g, int) and o.score is not None]
        g = np.array([x for x, _ in model_pairs], float)
        m = np.array([y for _, y in model_pairs], float)
        model_qwk = stats.defined(stats.qwk(g, m, labels)) if model_pairs else None
        model_exact = stats.defined(stats.exact(g, m)) if model_pairs else None
        human_qwk = _mean([rep.criteria[k].agreement.qwk.value for rep in reports])
        human_exact = _mean([rep.criteria[k].agreement.exact.value for rep in reports])
        ratings = [[v if isinstance(v := by_key.get((r, i, crit.id)), int) else None for i in reviewed] for r in names]
        deg = _diff(model_qwk, human_qwk)
        gates = rubric.gates_for(crit.id, gate_overrides)
        degradation.append(Degradation(
            criterion_id=crit.id, n=len(model_pairs), model_qwk=model_qwk, human_qwk=human_qwk, qwk=deg,
            model_exact=model_exact, human_exact=human_exact, exact=_diff(model_exact, human_exact),
            human_alpha=stats.alpha(ratings, labels), flagged=deg is not None and deg < gates.degradation_min,
        ))
    return ReviewerCalibration(source=source, reviewers=tuple(reports), pairs=tuple(pairs_out), degradation=tuple(degradation))
