"""One rater (a drafter or a reviewer) against gold on one criterion, with counts nothing hides.

Per item, gold is a score, `not_applicable` or absent (`no_gold`); the rater's outcome is a score,
`not_applicable` or `unscored`. Statistics use the items both scored; every other combination is
counted: applicability agreement (both say not applicable, or both treat it as applicable, an
`unscored` outcome counting as applicable), the unscored rate over gold-applicable items, and the
items without gold.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from grader.consistency.gates import GateVerdict, judge
from grader.consistency.goldset import NOT_APPLICABLE, GoldScore
from grader.consistency.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, Agreement, agreement
from grader.rubric import Gates

UNSCORED = "unscored"
Outcome = int | Literal["not_applicable", "unscored"]


class CriterionAgreement(BaseModel):
    """A rater's agreement with gold on one criterion (or pooled over criteria: `criterion_id` 'overall')."""

    model_config = ConfigDict(frozen=True)

    criterion_id: str
    n_items: int  # items the rater was measured on (gold or not)
    no_gold: int = 0
    gold_not_applicable: int = 0
    rater_not_applicable: int = 0
    applicability_agreement: float | None = None
    unscored: int = 0  # among gold-applicable items
    unscored_rate: float | None = None
    agreement: Agreement
    gates: Gates
    verdict: GateVerdict


def compare(criterion_id: str, pairs: Sequence[tuple[GoldScore | None, Outcome]], gates: Gates, *,
            labels: Sequence[int], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> CriterionAgreement:
    """`pairs`: per item (gold, rater outcome); gold None when the gold file has no label."""
    with_gold = [(g, o) for g, o in pairs if g is not None]
    applicable = [(g, o) for g, o in with_gold if g != NOT_APPLICABLE]
    scored = [(int(g), int(o)) for g, o in applicable if isinstance(o, int)]
    unscored = sum(1 for _, o in applicable if o == UNSCORED)
    agree_app = sum(1 for g, o in with_gold if (g == NOT_APPLICABLE) == (o == NOT_APPLICABLE))
    agr = agreement([g for g, _ in scored], [o for _, o in scored], labels=labels, resamples=resamples, seed=seed)
    rate = unscored / len(applicable) if applicable else None
    return CriterionAgreement(
        criterion_id=criterion_id, n_items=len(pairs), no_gold=len(pairs) - len(with_gold),
        gold_not_applicable=sum(1 for g, _ in with_gold if g == NOT_APPLICABLE),
        rater_not_applicable=sum(1 for _, o in with_gold if o == NOT_APPLICABLE),
        applicability_agreement=agree_app / len(with_gold) if with_gold else None,
        unscored=unscored, unscored_rate=rate, agreement=agr, gates=gates, verdict=judge(agr, rate, gates),
    )
