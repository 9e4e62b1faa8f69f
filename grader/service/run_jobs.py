"""Calibration runs and audits as durable jobs: what both share. A request names a gold set the server
has (never a path); the run is queued like an evaluation (leases, retries, audit-log entries); reading
it gives the job's state and, once done, the report that was stored in the commit that finished it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from grader.consistency.report import RunReport
from grader.service import jobs
from grader.service.errors import Invalid, NotFound
from grader.service.evaluations import check_model
from grader.service.views import iso
from grader.settings import Settings
from grader.store.db import Store
from grader.store.keys import Principal
from grader.store.models import AuditRun, CalibrationRun, Job

EVALS = Path(__file__).resolve().parents[2] / "evals"


def sets_under(root: Path) -> dict[str, Path]:
    """The sets in `root`: each visible sub-folder, by its name."""
    if not root.is_dir():
        return {}
    return {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith((".", "_"))}


def pick_set(name: str, sets: dict[str, Path], what: str) -> Path:
    if name not in sets:
        raise Invalid(f"unknown {what} set {name!r}; available: {sorted(sets)}", field="set")
    return sets[name]


def checked_rubric(requested: str | None, settings: Settings) -> str:
    from grader.rubric import available_rubrics

    rubric = requested or settings.rubric
    known = available_rubrics(settings.rubric_dirs())  # the server's search path (GRADER_RUBRIC_PATH, shipped)
    if rubric not in known:  # requests name rubrics on the server's path only, never paths
        raise Invalid(f"unknown rubric {rubric!r}; available: {sorted(known)}", field="rubric")
    return rubric


class RunRequest(BaseModel):
    """What starting a calibration run or an audit takes: the set by name, and the grader to run."""

    model_config = {"extra": "forbid"}

    set: str = Field(min_length=1, max_length=100, description="a set known to the server, by name")
    rubric: str | None = Field(default=None, max_length=100)
    drafter: Literal["rules", "llm"] | None = None
    model: str | None = Field(default=None, max_length=200)
    samples: int | None = Field(default=None, ge=1, le=16)
    resamples: int = Field(default=1000, ge=0, le=10000, description="bootstrap resamples for the CIs")


class RunJobView(BaseModel):
    """A calibration run or audit: the job's state; subclasses add the typed report."""

    id: str
    state: Literal["queued", "running", "done", "failed"]
    set: str
    error: str | None
    attempts: int
    created_at: datetime
    finished_at: datetime | None
    report: Any = None


class RunJobSummary(BaseModel):
    """A line of a list of runs: the job, and the report's verdict once it is done."""

    id: str
    state: Literal["queued", "running", "done", "failed"]
    set: str
    error: str | None
    created_at: datetime
    finished_at: datetime | None
    drafter: str | None = None
    epoch: str | None = None
    passed: bool | None = None


V = TypeVar("V", bound=RunJobView)


@dataclass(frozen=True)
class RunJobs(Generic[V]):
    """One kind of run job: the job kind, the table its report lands in, the report and view models."""

    kind: str
    label: str  # "calibration run", "audit": in error messages
    table: type[CalibrationRun] | type[AuditRun]
    report: type[RunReport]
    view: type[V]

    def view_of(self, session: Session, job: Job) -> V:
        row = session.scalars(select(self.table).where(self.table.job_id == job.id)).first()
        return self.view(id=job.id, state=job.state, set=job.params["set"], error=job.error, attempts=job.attempts,
                         created_at=iso(job.created_at), finished_at=iso(job.finished_at),
                         report=self.report.model_validate_json(row.report_json) if row else None)

    def submit(self, store: Store, settings: Settings, principal: Principal, params: dict[str, Any]) -> V:
        check_model(settings, params.get("drafter"), params.get("model"))
        with store.write() as session:
            job, _ = jobs.enqueue(session, kind=self.kind, params=params, submitted_by=principal.id,
                                  max_attempts=settings.job_attempts, queue_max=settings.queue_max)
            return self.view_of(session, job)

    def get(self, store: Store, job_id: str) -> V:
        with store.read() as session:
            job = session.get(Job, job_id)
            if job is None or job.kind != self.kind:
                raise NotFound(f"no such {self.label}")
            return self.view_of(session, job)

    def list_jobs(self, store: Store, *, offset: int = 0, limit: int = 50) -> tuple[list[RunJobSummary], int]:
        """The runs of this kind, newest first, with the total count (without loading reports)."""
        t = self.table
        with store.read() as session:
            total = session.scalar(select(func.count()).select_from(Job).where(Job.kind == self.kind)) or 0
            rows = session.execute(
                select(Job, t.drafter, t.epoch, t.passed).outerjoin(t, t.job_id == Job.id).where(Job.kind == self.kind)
                .order_by(Job.created_at.desc(), Job.id).offset(offset).limit(limit))
            return [RunJobSummary(id=job.id, state=job.state, set=job.params["set"], error=job.error,
                                  created_at=iso(job.created_at), finished_at=iso(job.finished_at),
                                  drafter=drafter, epoch=epoch, passed=passed)
                    for job, drafter, epoch, passed in rows], total
