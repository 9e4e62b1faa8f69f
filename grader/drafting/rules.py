"""The rules drafter: the offline default. Scores each criterion from the rubric's evidence rules.

Deterministic by construction: it reads only the bundle and the rubric, in their fixed order.
A criterion whose basis evidence is absent is `unscored` ("insufficient evidence"); the drafter
never falls back to a middle score.
"""

from __future__ import annotations

from evidence.model import EvidenceBundle, EvidenceItem, kind_matches
from evidence.static.injection_collector import INJECTION_KIND
from evidence.submission import Submission
from grader.draft import Citation, CriterionDraft, Draft, DrafterInfo, Flag
from grader.drafting.base import envelope, not_applicable, not_applicable_reason
from grader.drafting.confidence import confidence, draft_state
from grader.drafting.reasons import (
    HIGH, conflict_flags, conflicts, support_items, support_sentence, unobserved_flags, unobserved_sentence,
)
from grader.evidence_rules import RuleOutcome, evaluate_rules
from grader.rubric import Criterion, Rubric

RULES_DRAFTER_VERSION = "1.0.0"
INSUFFICIENT = "insufficient evidence"
MAX_BASIS_CITATIONS = 3

# Items that say part of an analyzer's evidence is missing: a static rule crashed on a file, the
# simulator could not finish (an op it lacks, a resource limit), or the reference failed so there is
# nothing to compare against. Reviewers see them as flags.
PARTIAL_FAILURE_KINDS = ("nki.rule_failure", "sim.incomplete", "sim.reference_error")
# Items that explain why a criterion's basis is absent; named in the rationale of an unscored criterion.
WHY_MISSING_KINDS = (*PARTIAL_FAILURE_KINDS, "sim.error", "sim.refused", "sim.not_run", "nki.wrapper")


def _cite(item: EvidenceItem) -> Citation:
    loc = item.location
    if loc is None:
        return Citation(evidence_id=item.id)
    return Citation(evidence_id=item.id, file=loc.file, start_line=loc.start_line, end_line=loc.end_line)


MAX_BASIS_TITLES = 4


def basis_highlights(criterion: Criterion, outcome: RuleOutcome) -> list[EvidenceItem]:
    """The basis evidence a rationale names (e.g. the cost model's estimate, bottleneck and top
    what-if): the most severe item of each basis kind, in the order the rubric lists the kinds."""
    out = []
    for pattern in criterion.basis:
        items = [i for i in outcome.basis if kind_matches(pattern, i.kind)]
        if items:
            out.append(max(items, key=lambda i: i.severity.rank))
    return out[:MAX_BASIS_TITLES]


def _basis_summary(criterion: Criterion, outcome: RuleOutcome) -> str:
    titles = [f"{i.title} [{i.id}]" for i in basis_highlights(criterion, outcome)]
    return (": " + "; ".join(titles)) if titles else ""


def _score(criterion: Criterion, outcome: RuleOutcome, lo: int, hi: int) -> tuple[int, list[str]]:
    """Start, subtract penalties (not below the criterion's penalty floor), then apply floors and caps
    (a cap wins over a floor: defects dominate)."""
    steps = [f"Basis evidence present{_basis_summary(criterion, outcome)}; starting at {criterion.start}."]
    score = criterion.start
    for hit in outcome.hits:
        if hit.rule.support or hit.rule.unobserved:  # said after the level ("Why it is this high", "Judged on the source")
            continue
        ids = ", ".join(i.id for i in hit.items[:4]) + (" ..." if len(hit.items) > 4 else "")
        if hit.penalty:
            score -= hit.penalty
            steps.append(f"-{hit.penalty}: {hit.rule.description} [{ids}].")
        else:
            steps.append(f"{hit.rule.effect.capitalize()}: {hit.rule.description} [{ids}].")
    if outcome.penalty:
        score = max(score, min(criterion.penalty_floor, criterion.start))
    if outcome.floor is not None:
        score = max(score, outcome.floor)
    if outcome.cap is not None:
        score = min(score, outcome.cap)
    return max(lo, min(hi, score)), steps


def reviewer_flags(bundle: EvidenceBundle) -> tuple[Flag, ...]:
    """What a reviewer must know whatever the score: missing analyzers, text that addresses the grader."""
    flags = [Flag(code="analyzer_failure", message=f"{f.analyzer} failed: {f.message}", evidence_id=f.id)
             for f in bundle.failures]
    flags += [Flag(code="analyzer_failure", message=i.title, evidence_id=i.id) for i in bundle.of_kind(*PARTIAL_FAILURE_KINDS)]
    flags += [Flag(code="injection_attempt", message=f"{i.title} ({i.location})", evidence_id=i.id)
              for i in bundle.of_kind(INJECTION_KIND)]
    return tuple(flags)


def draft_criterion(
    criterion: Criterion, submission: Submission, bundle: EvidenceBundle, rubric: Rubric, flags: tuple[Flag, ...] = (),
) -> CriterionDraft:
    """One criterion's draft; `flags` (from `reviewer_flags`) are attached to every applicable criterion."""
    reason = not_applicable_reason(criterion, submission)
    if reason:
        return not_applicable(criterion, reason)
    outcome = evaluate_rules(criterion, bundle)
    if not outcome.basis:
        failures = list(bundle.failures)
        partial = bundle.of_kind(*WHY_MISSING_KINDS)
        detail = f"{INSUFFICIENT}: none of {list(criterion.basis)} was produced"
        if failures:
            detail += "; failed analyzers: " + ", ".join(f"{f.analyzer} ({f.error_type})" for f in failures)
        if partial:
            detail += "; " + "; ".join(i.title for i in partial)
        return CriterionDraft(
            criterion_id=criterion.id, status="unscored", reason=INSUFFICIENT, rationale=detail,
            citations=tuple(Citation(evidence_id=f.id) for f in failures)
            + tuple(_cite(i) for i in partial if criterion.cites(i.kind)),
            flags=flags,
        )
    score, steps = _score(criterion, outcome, rubric.scale_min, rubric.scale_max)
    level = next(level.descriptor for level in criterion.levels if level.score == score)
    found = conflicts(criterion, bundle)
    state = draft_state(outcome, score, bool(found))
    rationale = (" ".join(steps) + f" Level {score}: {level}" + support_sentence(outcome, score)
                 + unobserved_sentence(outcome))
    if found:
        rationale += (f" The simulation contradicts {len(found)} static finding(s) this criterion rests on; "
                      "they cap nothing until a reviewer settles them.")
    cited: dict[str, Citation] = {}
    for hit in outcome.hits:
        for item in ([] if hit.rule.support else hit.items):
            cited.setdefault(item.id, _cite(item))
    for item in support_items(outcome) if score >= HIGH else []:
        cited.setdefault(item.id, _cite(item))
    for conflict, static in found:
        for item in (conflict, static):
            if item is not None:
                cited.setdefault(item.id, _cite(item))
    for item in basis_highlights(criterion, outcome) + list(outcome.basis[:MAX_BASIS_CITATIONS]):
        cited.setdefault(item.id, _cite(item))
    return CriterionDraft(
        criterion_id=criterion.id, status="scored", score=score, rationale=rationale,
        citations=tuple(cited.values()), confidence=confidence(criterion, rubric.id, state, _coverage(criterion, outcome)),
        flags=flags + tuple(conflict_flags(found)) + tuple(unobserved_flags(criterion, outcome)),
    )


def _coverage(criterion: Criterion, outcome: RuleOutcome) -> float:
    """The share of the criterion's basis kinds the evidence covered (confidence without a calibration table)."""
    covered = sum(any(kind_matches(k, i.kind) for i in outcome.basis) for k in criterion.basis)
    return covered / max(1, len(criterion.basis))


def criterion_state(
    criterion: Criterion, submission: Submission, bundle: EvidenceBundle, rubric: Rubric,
) -> tuple[int, str, float] | None:
    """(score, draft state, basis coverage) of a scored criterion, None when it is not scored: what
    `evals/fit_confidence.py` counts against gold."""
    if not_applicable_reason(criterion, submission):
        return None
    outcome = evaluate_rules(criterion, bundle)
    if not outcome.basis:
        return None
    score, _ = _score(criterion, outcome, rubric.scale_min, rubric.scale_max)
    return score, draft_state(outcome, score, bool(conflicts(criterion, bundle))), _coverage(criterion, outcome)


class RulesDrafter:
    name = "rules"
    version = RULES_DRAFTER_VERSION

    def draft(self, submission: Submission, bundle: EvidenceBundle, rubric: Rubric) -> Draft:
        flags = reviewer_flags(bundle)  # the same for every criterion: computed once
        criteria = [draft_criterion(c, submission, bundle, rubric, flags) for c in rubric.criteria]
        return envelope(submission, bundle, rubric, DrafterInfo(name=self.name, version=self.version), criteria)
