"""The drafter contract and what every drafter shares: applicability and the draft envelope."""

from __future__ import annotations

from typing import Protocol

from evidence.model import EvidenceBundle
from evidence.submission import Submission
from grader.draft import CriterionDraft, Draft, DrafterInfo, DraftRecord, RubricRef
from grader.rubric import Criterion, Rubric


def not_applicable_reason(criterion: Criterion, submission: Submission) -> str | None:
    """Why `criterion` cannot apply to `submission`, or None when it applies."""
    m = submission.manifest
    reasons = {
        "has_cuda": (m.migration is None, "no CUDA source in the submission ([migration] is absent)"),
        "has_claims": (m.claims is None, "no benchmark claims in the submission ([claims] is absent)"),
        "has_reference": (m.reference is None, "no reference implementation in the submission ([reference] is absent)"),
    }
    missing, reason = reasons.get(criterion.applies_when, (False, ""))
    return reason if missing else None


def not_applicable(criterion: Criterion, reason: str) -> CriterionDraft:
    return CriterionDraft(criterion_id=criterion.id, status="not_applicable", reason=reason, rationale=reason)


def envelope(
    submission: Submission,
    bundle: EvidenceBundle,
    rubric: Rubric,
    drafter: DrafterInfo,
    criteria: list[CriterionDraft],
    record: DraftRecord | None = None,
) -> Draft:
    """Assemble a Draft. Collector timings are dropped so the same submission gives identical JSON."""
    return Draft(
        task_id=submission.manifest.task.id,
        submission_hash=submission.content_hash,
        rubric=RubricRef(id=rubric.id, version=rubric.version, hash=rubric.content_hash),
        drafter=drafter,
        criteria=tuple(criteria),
        evidence=bundle.model_copy(update={"timings": {}}),
        record=record or DraftRecord(),
    )


class Drafter(Protocol):
    """Turns evidence into a draft for every criterion of a rubric."""

    def draft(self, submission: Submission, bundle: EvidenceBundle, rubric: Rubric) -> Draft: ...
