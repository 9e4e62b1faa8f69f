"""Draft evaluations: per-criterion scores with citations, never final until a human signs off."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evidence.model import EvidenceBundle

DRAFT_SCHEMA_VERSION = 1

Status = Literal["scored", "not_applicable", "unscored"]


class Citation(BaseModel):
    """A pointer into the evidence: an evidence id, optionally a source line range and quoted text."""

    model_config = ConfigDict(frozen=True)

    evidence_id: str
    file: str | None = None
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)
    quote: str | None = None


class Flag(BaseModel):
    """Something a reviewer must look at (e.g. 'contradicts_evidence', 'unstable_samples')."""

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    evidence_id: str | None = None


class GoldNeighbour(BaseModel):
    """A calibration item whose evidence profile resembles the draft's, with its gold for the criterion."""

    model_config = ConfigDict(frozen=True)

    item: str  # item id in the calibration set
    similarity: float = Field(ge=0, le=1)  # Jaccard similarity of evidence profiles
    gold: int


class ConsistencyCheck(BaseModel):
    """The consistency checker's verdict on one criterion of a draft (grader.consistency.check).

    `calibration` is the gate verdict of the newest calibration run of the draft's grader epoch for
    this criterion: "calibrated", "failed gate: ..." or "no calibration for this epoch".
    `far_from_gold` is set when the drafted score is two or more levels from the (median) gold score
    of its nearest calibration items by evidence profile, which are cited in `neighbours`.
    `needs_full_review` is set when the criterion is not calibrated, far from gold, contradicts the
    evidence or is unscored; `reasons` says which.
    """

    model_config = ConfigDict(frozen=True)

    calibration: str
    calibrated: bool
    run_id: str | None = None  # the calibration run the verdict comes from
    epoch: str  # the draft's grader epoch (hash)
    neighbours: tuple[GoldNeighbour, ...] = ()
    far_from_gold: bool = False
    needs_full_review: bool
    reasons: tuple[str, ...] = ()


class CriterionDraft(BaseModel):
    model_config = ConfigDict(frozen=True)

    criterion_id: str
    status: Status
    score: int | None = None
    rationale: str = ""
    citations: tuple[Citation, ...] = ()
    confidence: float | None = Field(default=None, ge=0, le=1)
    flags: tuple[Flag, ...] = ()
    reason: str | None = None  # why not_applicable / unscored
    samples: tuple[int | None, ...] = ()  # per-sample scores when k > 1 (None = that sample unscored)
    dispersion: float | None = None
    consistency: ConsistencyCheck | None = None  # set by the consistency check (None: not checked)

    @model_validator(mode="after")
    def _status_matches_score(self) -> CriterionDraft:
        if self.status == "scored" and self.score is None:
            raise ValueError(f"{self.criterion_id}: a scored criterion needs a score")
        if self.status != "scored" and self.score is not None:
            raise ValueError(f"{self.criterion_id}: status {self.status} cannot carry a score")
        if self.status != "scored" and not self.reason:
            raise ValueError(f"{self.criterion_id}: status {self.status} needs a reason")
        return self


class RubricRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    version: str
    hash: str


class DrafterInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # "rules" | "llm"
    version: str
    model: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class DraftRecord(BaseModel):
    """What it takes to reproduce a draft: templates, model calls, usage (empty for the rules drafter)."""

    model_config = ConfigDict(frozen=True)

    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    seed: int | None = None
    calls: tuple[dict[str, Any], ...] = ()  # per criterion and sample: messages hash, raw reply, usage, latency
    usage: dict[str, float] = Field(default_factory=dict)
    cost_usd: float | None = None
    # Criteria left unscored because the model did not answer within the request timeout.
    slow_criteria: tuple[str, ...] = ()
    sandbox: dict[str, str] = Field(default_factory=dict)  # how submitted code ran: mode, bwrap, import policy


class Draft(BaseModel):
    """A draft evaluation of one submission against one rubric, with the evidence it stands on."""

    model_config = ConfigDict(frozen=True)

    version: int = DRAFT_SCHEMA_VERSION
    task_id: str
    submission_hash: str
    rubric: RubricRef
    drafter: DrafterInfo
    criteria: tuple[CriterionDraft, ...]
    evidence: EvidenceBundle
    record: DraftRecord = Field(default_factory=DraftRecord)

    def criterion(self, criterion_id: str) -> CriterionDraft:
        for c in self.criteria:
            if c.criterion_id == criterion_id:
                return c
        raise KeyError(criterion_id)
