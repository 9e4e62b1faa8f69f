"""Calibration over the service: runs of the server's gold sets as durable jobs, reviewers' scores on
calibration items, and reviewers' agreement with gold and certification per criterion."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.consistency.report import CalibrationReport, ReviewerReport
from grader.consistency.reviews import ReviewerScore
from grader.service.errors import Conflict, Forbidden, Invalid, NotFound
from grader.service.evaluations import job_settings
from grader.service.run_jobs import (
    EVALS,
    RunJobs,
    RunJobSummary,
    RunJobView,
    RunRequest,
    checked_rubric,
    pick_set,
    sets_under,
)
from grader.settings import Settings
from grader.store import audit_log
from grader.store.db import Store
from grader.store.keys import Principal
from grader.store.models import ApiKey, CalibrationRun, Job, ReviewerScoreRow
from grader.store.runs import SqlRunStore

KIND = "calibration"
SETS_ROOT = EVALS / "calibration"
REVIEWER_RESAMPLES = 200
_CERTIFICATIONS: dict[tuple[object, ...], ReviewerCalibrationView] = {}  # by reviewer, set, run and scores version


def known_sets() -> dict[str, Path]:
    """Calibration sets the server has (requests name them; they never pass paths)."""
    return sets_under(SETS_ROOT)


def _set_path(name: str) -> Path:
    return pick_set(name, known_sets(), "calibration")


class CalibrationRequest(RunRequest):
    """A calibration run of a set in evals/calibration."""


class CalibrationRunView(RunJobView):
    report: CalibrationReport | None = None


RUNS = RunJobs(KIND, "calibration run", CalibrationRun, CalibrationReport, CalibrationRunView)


def submit_run(store: Store, settings: Settings, principal: Principal, request: CalibrationRequest) -> CalibrationRunView:
    _set_path(request.set)
    params = request.model_dump() | {"rubric": checked_rubric(request.rubric, settings)}
    return RUNS.submit(store, settings, principal, params)


def get_run(store: Store, run_id: str) -> CalibrationRunView:
    return RUNS.get(store, run_id)


def list_runs(store: Store, *, offset: int = 0, limit: int = 50) -> tuple[list[RunJobSummary], int]:
    """Calibration runs, newest first, with the total count."""
    return RUNS.list_jobs(store, offset=offset, limit=limit)


def run_calibration_job(store: Store, settings: Settings, job: Job):  # type: ignore[no-untyped-def]
    """Worker side: grade the set and compare with gold; the run is stored when the job finishes."""
    from grader.consistency.calibrate import run_calibration
    from grader.consistency.executor import LocalExecutor

    p = job.params
    report = run_calibration(_set_path(p["set"]), rubric=p["rubric"], settings=job_settings(settings, p),
                             executor=LocalExecutor(1), resamples=p.get("resamples", 1000))
    runs = SqlRunStore(store, actor=job.worker or "worker", job_id=job.id)

    def record(session: Session, _job: Job) -> dict[str, Any]:
        runs.add_run(session, report)
        return {"run": report.id, "passed": report.passed}

    return record


# -- reviewers ---------------------------------------------------------------------------------

class ReviewerScoreIn(BaseModel):
    model_config = {"extra": "forbid"}

    item: str = Field(min_length=1, max_length=255)
    criterion: str = Field(min_length=1, max_length=64)
    score: int | Literal["not_applicable", "unscored"]


class ReviewerScoresRequest(BaseModel):
    model_config = {"extra": "forbid"}

    set: str = Field(min_length=1, max_length=100)
    scores: list[ReviewerScoreIn] = Field(min_length=1, max_length=2000)


class ReviewerCalibrationView(BaseModel):
    reviewer: str
    set: str
    run_id: str = Field(description="the calibration run whose drafts the reviewer is compared beside")
    report: ReviewerReport
    certified: dict[str, bool]


def _gold(set_name: str, rubric_id: str):  # type: ignore[no-untyped-def]
    from grader.consistency.goldset import load_gold_set
    from grader.rubric import load_rubric

    rubric = load_rubric(rubric_id)
    return load_gold_set(_set_path(set_name), rubric), rubric


def submit_scores(store: Store, settings: Settings, principal: Principal, request: ReviewerScoresRequest) -> int:
    """Store (or replace) the caller's scores for calibration items; returns how many were stored."""
    gold, rubric = _gold(request.set, settings.rubric)
    items, criteria = {i.id for i in gold.items}, {c.id for c in rubric.criteria}
    for n, s in enumerate(request.scores):
        if s.item not in items:
            raise Invalid(f"unknown item {s.item!r} in set {request.set!r}", field=f"scores[{n}].item")
        if s.criterion not in criteria:
            raise Invalid(f"unknown criterion {s.criterion!r}", field=f"scores[{n}].criterion")
        if isinstance(s.score, int) and not rubric.scale_min <= s.score <= rubric.scale_max:
            raise Invalid(f"score {s.score} outside {rubric.scale_min}-{rubric.scale_max}", field=f"scores[{n}].score")
    now = time.time()
    with store.write() as session:
        for s in request.scores:
            key = dict(reviewer=principal.id, set_name=request.set, item_id=s.item, criterion_id=s.criterion)
            row = session.scalars(select(ReviewerScoreRow).filter_by(**key)).first()
            if row is None:
                session.add(ReviewerScoreRow(**key, score=str(s.score), created_at=now))
            else:
                row.score, row.created_at = str(s.score), now
        audit_log.append(session, actor=principal.id, action="reviewer_scores.submitted", subject=f"reviewer:{principal.id}",
                         data={"set": request.set, "scores": [s.model_dump() for s in request.scores]})
    return len(request.scores)


def reviewer_calibration(store: Store, settings: Settings, principal: Principal, reviewer: str,
                         set_name: str) -> ReviewerCalibrationView:
    """A reviewer's agreement with gold per criterion, beside the newest calibration run of the set."""
    from grader.consistency.reviewers import calibrate_reviewers

    with store.read() as session:
        key = session.scalars(select(ApiKey).where((ApiKey.id == reviewer) | (ApiKey.name == reviewer))).first()
        if key is None:
            raise NotFound(f"no reviewer {reviewer!r}")
        if key.id != principal.id and not principal.may("lead"):
            raise Forbidden("reviewers see their own calibration only; leads see everyone's")
        rows = list(session.scalars(select(ReviewerScoreRow).where(ReviewerScoreRow.reviewer == key.id,
                                                                    ReviewerScoreRow.set_name == set_name)))
        run = session.execute(select(CalibrationRun.id, CalibrationRun.rubric).where(CalibrationRun.set_name == set_name)
                              .order_by(CalibrationRun.created_at.desc()).limit(1)).first()
    if not rows:
        raise NotFound(f"reviewer {key.name!r} has no scores for set {set_name!r}")
    if run is None:
        raise Conflict(f"no calibration run of set {set_name!r} yet; POST /v1/calibration-runs first")
    # The bootstrap takes seconds; the same scores beside the same run give the same answer.
    fingerprint = (key.id, key.name, set_name, run.id, len(rows), max(r.created_at for r in rows))
    if (cached := _CERTIFICATIONS.get(fingerprint)) is not None:
        return cached
    gold, rubric = _gold(set_name, run.rubric)
    scores = [ReviewerScore(reviewer=key.name, item=r.item_id, criterion=r.criterion_id,
                            score=int(r.score) if r.score.isdigit() else r.score, row=i + 1) for i, r in enumerate(rows)]
    scored = {(s.item, s.criterion) for s in scores}
    for item in {s.item for s in scores}:  # criteria the reviewer left out count as unscored
        scores += [ReviewerScore(reviewer=key.name, item=item, criterion=c.id, score="unscored", row=0)
                   for c in rubric.criteria if (item, c.id) not in scored]
    with store.read() as session:
        report = CalibrationReport.model_validate_json(session.get(CalibrationRun, run.id).report_json)
    result = calibrate_reviewers(scores, gold, rubric, list(report.outcomes), None, REVIEWER_RESAMPLES, 7,
                                 source="reviewer-scores")
    mine = result.reviewers[0]
    view = ReviewerCalibrationView(reviewer=key.name, set=set_name, run_id=run.id, report=mine, certified=mine.certified)
    _CERTIFICATIONS[fingerprint] = view
    while len(_CERTIFICATIONS) > 256:
        _CERTIFICATIONS.pop(next(iter(_CERTIFICATIONS)))
    return view
