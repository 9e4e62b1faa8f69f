"""What callers see of an evaluation (HTTP bodies and the Python service API alike)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from grader.draft import Draft

ReviewState = Literal["pending", "in_review", "signed_off"]


def iso(t: float | None) -> datetime | None:
    return None if t is None else datetime.fromtimestamp(t, UTC)


class Value(BaseModel):
    """A criterion's value: scored 1-5, not_applicable, or unscored."""

    status: Literal["scored", "not_applicable", "unscored"]
    score: int | None = None


class CriterionState(BaseModel):
    criterion_id: str
    drafted: Value
    current: Value  # after reviewers' edits
    blockers: list[str] = Field(description="why sign-off needs an acknowledgement with a reason")
    acknowledged: bool
    reviewed: bool


class ReviewView(BaseModel):
    id: int
    criterion_id: str
    action: Literal["accept", "edit"]
    previous: Value
    new: Value
    reason: str | None
    author: str
    epoch: str
    created_at: datetime


class SignOffView(BaseModel):
    author: str
    final: dict[str, Value]
    comment: str | None
    epoch: str
    created_at: datetime


class EvaluationSummary(BaseModel):
    id: str
    state: Literal["queued", "running", "done", "failed"]
    review_state: ReviewState | None = Field(description="for finished drafts: pending, in_review or signed_off")
    task_id: str | None
    submission_id: str | None
    submitted_by: str
    attempts: int
    max_attempts: int
    worker: str | None
    error: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    flags: list[str] = Field(default_factory=list, description="codes of the flags on any criterion of the draft")
    calibrated: bool | None = Field(default=None, description="every judged criterion's grader passed calibration")


class Evaluation(EvaluationSummary):
    epoch: str | None = None
    draft: Draft | None = None
    criteria: list[CriterionState] = []
    reviews: list[ReviewView] = []
    sign_off: SignOffView | None = None


class EvaluationPage(BaseModel):
    items: list[EvaluationSummary]
    total: int
    offset: int
    limit: int


class CriterionDecision(BaseModel):
    """Accept the drafted (or current) value, or edit it. An edit needs a reason; so does accepting a
    criterion with blockers (that is the acknowledgement)."""

    model_config = {"extra": "forbid"}

    criterion_id: str = Field(min_length=1, max_length=64)
    action: Literal["accept", "edit"]
    score: int | None = Field(default=None, ge=1, le=5, description="edit: the new score")
    not_applicable: bool = Field(default=False, description="edit: mark the criterion not applicable")
    reason: str | None = Field(default=None, max_length=4000)


class ReviewRequest(BaseModel):
    model_config = {"extra": "forbid"}

    decisions: list[CriterionDecision] = Field(min_length=1, max_length=64)


class SignOffRequest(BaseModel):
    model_config = {"extra": "forbid"}

    comment: str | None = Field(default=None, max_length=4000)
