"""Calibration reports: pydantic models a store saves, the API serves and the HTML report renders."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from grader.consistency.compare import CriterionAgreement
from grader.consistency.gates import NO_CALIBRATION, GateVerdict
from grader.consistency.goldset import GoldScore
from grader.draft import Citation, DrafterInfo, RubricRef, Status
from grader.epoch import GraderEpoch
from grader.rubric import Gates

REPORT_VERSION = 1


class SetRef(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    path: str
    hash: str
    items: int


class ItemOutcome(BaseModel):
    """One item x criterion: gold next to the draft's status, score, rationale and citations."""

    model_config = ConfigDict(frozen=True)

    item: str
    criterion_id: str
    gold: GoldScore | None
    gold_rationale: str = ""
    status: Status
    score: int | None = None
    rationale: str = ""
    reason: str | None = None
    citations: tuple[Citation, ...] = ()
    flags: tuple[str, ...] = ()
    confidence: float | None = None

    @property
    def distance(self) -> int | None:
        """|draft - gold| when both are scores."""
        if isinstance(self.gold, int) and self.score is not None:
            return abs(self.score - self.gold)
        return None


class ItemRecord(BaseModel):
    """What the run knows about one item: its draft's identity, evidence profile, or its error."""

    model_config = ConfigDict(frozen=True)

    item: str
    task_id: str | None = None
    submission_hash: str | None = None
    bundle_hash: str | None = None
    profile: tuple[str, ...] = ()
    error: str | None = None
    duration_s: float = 0.0


class ReviewerReport(BaseModel):
    """One reviewer against gold, per criterion, with a certification verdict per criterion."""

    model_config = ConfigDict(frozen=True)

    reviewer: str
    items: int
    criteria: tuple[CriterionAgreement, ...]
    overall: CriterionAgreement

    @property
    def certified(self) -> dict[str, bool]:
        return {c.criterion_id: c.verdict.passed for c in self.criteria}


class PairAgreement(BaseModel):
    """Two reviewers on the items both scored (human-human agreement), one criterion."""

    model_config = ConfigDict(frozen=True)

    a: str
    b: str
    criterion_id: str
    n: int
    exact: float | None
    adjacent: float | None
    qwk: float | None


class Degradation(BaseModel):
    """Model-gold minus human-gold agreement on one criterion, on the items reviewers graded."""

    model_config = ConfigDict(frozen=True)

    criterion_id: str
    n: int  # reviewed items with a gold score and a drafted score
    model_qwk: float | None
    human_qwk: float | None  # mean over reviewers
    qwk: float | None  # model - human
    model_exact: float | None
    human_exact: float | None
    exact: float | None
    human_alpha: float | None  # Krippendorff's ordinal alpha among reviewers
    flagged: bool  # qwk degradation below the gate (rubric degradation_min)


class ReviewerCalibration(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str  # reviews file name
    reviewers: tuple[ReviewerReport, ...]
    pairs: tuple[PairAgreement, ...]
    degradation: tuple[Degradation, ...]


class RunReport(BaseModel):
    """What calibration runs and audits share: the set, the grader epoch, agreement with gold, outcomes."""

    model_config = ConfigDict(frozen=True)

    version: int = REPORT_VERSION
    id: str
    created_at: str
    set: SetRef
    rubric: RubricRef
    epoch: GraderEpoch
    drafter: DrafterInfo
    executor: str = "local"
    workers: int = 1
    duration_s: float = 0.0
    criteria: tuple[CriterionAgreement, ...]  # agreement with the set's gold
    overall: CriterionAgreement
    outcomes: tuple[ItemOutcome, ...]
    items: tuple[ItemRecord, ...]

    def criterion(self, criterion_id: str) -> CriterionAgreement:
        for c in self.criteria:
            if c.criterion_id == criterion_id:
                return c
        raise KeyError(criterion_id)

    def verdict_text(self, criterion_id: str) -> str:
        try:
            return self.criterion(criterion_id).verdict.summary
        except KeyError:
            return NO_CALIBRATION

    def verdict(self, criterion_id: str) -> GateVerdict | None:
        try:
            return self.criterion(criterion_id).verdict
        except KeyError:
            return None

    def disagreements(self, limit: int = 10) -> list[ItemOutcome]:
        """Largest |draft - gold| first (ties: item, criterion), only where both are scores and differ."""
        scored = [o for o in self.outcomes if o.distance]
        return sorted(scored, key=lambda o: (-(o.distance or 0), o.item, o.criterion_id))[:limit]

    def comparable(self) -> dict:
        """The report without what legitimately differs between identical runs (id, time, executor)."""
        return self.model_dump(mode="json", exclude={"id", "created_at", "duration_s", "executor", "workers"},
                               context=None) | {"items": [i.model_dump(mode="json", exclude={"duration_s"}) for i in self.items]}


class CalibrationReport(RunReport):
    """A calibration run: per-criterion and overall agreement with gold, gates, per-item outcomes."""

    kind: Literal["calibration"] = "calibration"
    resamples: int
    gates: Gates  # the rubric's gates after command-line overrides
    gate_overrides: dict[str, float] = Field(default_factory=dict)
    reviewers: ReviewerCalibration | None = None

    @property
    def passed(self) -> bool:
        return all(c.verdict.passed for c in self.criteria) and self.overall.verdict.passed
