"""Evaluate a criterion's declarative evidence rules against a bundle.

Shared by the rules drafter (which scores from them) and the evidence guards (which check a model's
score against the caps and floors they imply), so both read the rubric the same way.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

from evidence.model import EvidenceBundle, EvidenceItem, kind_matches
from grader.rubric import Criterion, EvidenceMatch, EvidenceRule

_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _metric(item: EvidenceItem, name: str, ratio_to: str | None) -> float | None:
    value = item.metrics.get(name)
    if value is None or ratio_to is None:
        return value
    denominator = item.metrics.get(ratio_to)
    return value / denominator if denominator else None  # no denominator: the test cannot apply


def item_matches(match: EvidenceMatch, item: EvidenceItem) -> bool:
    if not kind_matches(match.kind, item.kind):
        return False
    if match.min_severity is not None and item.severity.rank < match.min_severity.rank:
        return False
    if match.metric is not None:
        value = _metric(item, match.metric, match.ratio_to)
        if value is None or not _OPS[match.op](value, match.value):
            return False
    tests = dict(match.labels)
    if match.label is not None:
        tests[match.label] = match.equals or []
    return all(_label_holds(item.labels.get(name), wanted) for name, wanted in tests.items())


def _label_holds(value: str | None, wanted: str | list[str]) -> bool:
    """Positive values: the label equals one of them ('err_*' matches a prefix). '!'-values: it equals none."""
    wanted = [wanted] if isinstance(wanted, str) else list(wanted)
    excluded = [w[1:] for w in wanted if w.startswith("!")]
    allowed = [w for w in wanted if not w.startswith("!")]
    if value is None:
        return not allowed
    if any(kind_matches(w, value) for w in excluded):
        return False
    return not allowed or any(kind_matches(w, value) for w in allowed)


@dataclass(frozen=True)
class RuleHit:
    rule: EvidenceRule
    items: tuple[EvidenceItem, ...]

    @property
    def penalty(self) -> int:
        if self.rule.penalty is None:
            return 0
        total = self.rule.penalty * (len(self.items) if self.rule.per_item else 1)
        return min(total, self.rule.max_penalty) if self.rule.max_penalty else total


@dataclass(frozen=True)
class RuleOutcome:
    """What the rules say about one criterion: its basis items, the rules that fired and the bounds."""

    basis: tuple[EvidenceItem, ...]
    hits: tuple[RuleHit, ...] = field(default=())

    @property
    def cap(self) -> int | None:
        caps = [h.rule.cap for h in self.hits if h.rule.cap is not None]
        return min(caps) if caps else None

    @property
    def floor(self) -> int | None:
        floors = [h.rule.floor for h in self.hits if h.rule.floor is not None]
        return max(floors) if floors else None

    @property
    def penalty(self) -> int:
        return sum(h.penalty for h in self.hits)

    @property
    def supports(self) -> tuple[RuleHit, ...]:
        """The positive evidence found (support rules that matched)."""
        return tuple(h for h in self.hits if h.rule.support)

    @property
    def unobserved(self) -> tuple[RuleHit, ...]:
        """Why the criterion's subject was not observed (unobserved rules that matched): the score is the source's."""
        return tuple(h for h in self.hits if h.rule.unobserved)

    def binding(self, score: int) -> list[RuleHit]:
        """The cap/floor hits that `score` violates (empty when the score respects the evidence)."""
        out = []
        for hit in self.hits:
            if hit.rule.cap is not None and score > hit.rule.cap:
                out.append(hit)
            if hit.rule.floor is not None and score < hit.rule.floor:
                out.append(hit)
        return out


def evaluate_rules(criterion: Criterion, bundle: EvidenceBundle) -> RuleOutcome:
    basis = tuple(i for i in bundle.items if any(kind_matches(p, i.kind) for p in criterion.basis))
    hits = []
    for rule in criterion.rules:
        matched = tuple(i for i in bundle.items if item_matches(rule.when, i))
        if matched:
            hits.append(RuleHit(rule, matched))
    return RuleOutcome(basis=basis, hits=tuple(hits))
