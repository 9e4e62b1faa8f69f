"""Evaluations as a service: submit (validate, store, enqueue), read, list the review queue, and the
worker-side job that drafts. Callable from Python (the web pages) as well as from the HTTP routers."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session, aliased

from evidence.submission import Submission
from grader.consistency.epochs import calibration_epoch
from grader.draft import Draft
from grader.evaluate import evaluate
from grader.rubric import available_rubrics, load_rubric, unknown_rubric
from grader.service import jobs, review
from grader.service.errors import Invalid, NotFound
from grader.service.runs import run_store
from grader.service.views import Evaluation, EvaluationPage, EvaluationSummary, iso
from grader.settings import DrafterChoice, Settings
from grader.store.db import Store
from grader.store.keys import Principal
from grader.store.models import DraftRow, Job, ReviewRow, SignOff
from grader.store.submissions import get_submission, put_submission
from grader.submission import Limits, submission_from_upload

KIND = "evaluation"
FLAG_FILTER = re.compile(r"^[a-z0-9_]{1,64}$")
QUEUE_STATES = ("queued", "running", "done", "failed", "needs_review", "signed_off")


@dataclass(frozen=True)
class EvaluationOptions:
    rubric: str | None = None
    drafter: str | None = None
    model: str | None = None
    samples: int | None = None
    no_cache: bool = False


def job_settings(base: Settings, params: dict[str, Any]) -> Settings:
    overrides: dict[str, Any] = {k: params[k] for k in ("drafter", "model", "samples") if params.get(k)}
    if "drafter" in overrides:  # model_copy does not validate: keep the field's enum type
        overrides["drafter"] = DrafterChoice(overrides["drafter"])
    if params.get("no_cache"):
        overrides["use_cache"] = False
    return base.model_copy(update=overrides)


def check_model(settings: Settings, drafter: str | None, model: str | None) -> None:
    """Refused before queueing: a model off the server's allow-list, or the llm drafter with no model."""
    allowed = settings.model_allow_list()
    if model and model not in allowed:  # a caller never picks what the server pays for
        raise Invalid(f"model {model!r} is not allowed on this server; allowed: {allowed} "
                      "(the operator sets GRADER_ALLOWED_MODELS)", field="model")
    if job_settings(settings, {"drafter": drafter, "model": model}).resolved_drafter() == "llm" and not (model or settings.model):
        raise Invalid("the llm drafter needs a model: pass `model` or set GRADER_MODEL on the server", field="model")


def submit(store: Store, settings: Settings, principal: Principal, manifest: str | dict[str, Any],
           files: dict[str, str], options: EvaluationOptions = EvaluationOptions(),
           idempotency_key: str | None = None) -> tuple[Evaluation, bool]:
    """Validate the upload (bad input raises a one-line SubmissionError), store it, queue a job."""
    rubric_id = options.rubric or settings.rubric
    if rubric_id not in available_rubrics(settings.rubric_dirs()):  # uploads name rubrics on the search path, never paths
        raise Invalid(unknown_rubric(rubric_id, settings.rubric_dirs()).message, field="rubric")
    check_model(settings, options.drafter, options.model)
    submission = submission_from_upload(manifest, files, Limits.from_settings(settings))
    params = {"rubric": rubric_id, "drafter": options.drafter, "model": options.model,
              "samples": options.samples, "no_cache": options.no_cache}
    with store.write() as session:
        sid = put_submission(session, submission)
        job, created = jobs.enqueue(session, kind=KIND, params=params, submitted_by=principal.id,
                                    max_attempts=settings.job_attempts, queue_max=settings.queue_max,
                                    submission_id=sid, task_id=submission.manifest.task.id,
                                    idempotency_key=idempotency_key)
        return _view(session, job, full=False), created


def run_evaluation_job(store: Store, settings: Settings, job: Job):  # type: ignore[no-untyped-def]
    """Worker side: draft the stored submission; returns the recorder `jobs.finish` calls."""
    with store.read() as session:
        submission = get_submission(session, job.submission_id or "")
    if submission is None:
        raise NotFound(f"submission {job.submission_id} of job {job.id} is missing")
    settings = job_settings(settings, job.params)
    rubric = load_rubric(job.params["rubric"], settings.rubric_dirs())
    draft = evaluate(submission, rubric=rubric, settings=settings, store=run_store(store, settings))
    text, epoch = draft.model_dump_json(), calibration_epoch(rubric, settings).hash
    codes, uncalibrated = draft_summary(draft)

    def record(session: Session, held: Job) -> dict[str, Any]:
        now = time.time()
        session.add(DraftRow(job_id=held.id, draft_json=text, epoch=epoch, model_calls=len(draft.record.calls),
                             cost_usd=draft.record.cost_usd or 0.0, latency_s=now - held.created_at, created_at=now,
                             flag_codes=codes, uncalibrated=uncalibrated))
        return {"epoch": epoch, "drafter": draft.drafter.name}

    return record


def draft_summary(draft: Draft) -> tuple[str, int]:
    """What the queue filters on: ' code1 code2 ' of the flags on any criterion ('' when none), and
    how many judged criteria lack a passing calibration (migration 0003 fills older rows alike)."""
    codes = sorted({f.code for c in draft.criteria for f in c.flags})
    uncalibrated = sum(1 for c in draft.criteria
                       if c.status != "not_applicable" and not (c.consistency and c.consistency.calibrated))
    return (" " + " ".join(codes) + " ") if codes else "", uncalibrated


def _visible(principal: Principal, job: Job | None) -> Job:
    # Submitters see their own evaluations only; others' are reported as missing, not forbidden.
    if job is None or job.kind != KIND or (not principal.may("reviewer") and job.submitted_by != principal.id):
        raise NotFound("no such evaluation")
    return job


def get(store: Store, principal: Principal, evaluation_id: str) -> Evaluation:
    with store.read() as session:
        return _view(session, _visible(principal, session.get(Job, evaluation_id)), full=True)


def get_draft(session: Session, job_id: str) -> tuple[Draft, str] | None:
    row = session.get(DraftRow, job_id)
    return None if row is None else (parsed_draft(row.draft_json), row.epoch)


@lru_cache(maxsize=32)
def parsed_draft(draft_json: str) -> Draft:
    """A stored draft, validated once per content: a draft is written once and never changed, and
    Draft is frozen, so every page and API read of it can share one object (validating a 200-item
    draft costs milliseconds per request, and pages derive more from the same object; see
    grader.web.per_draft)."""
    return Draft.model_validate_json(draft_json)


def _review_state(job_state: str, signed: bool, reviewed: bool) -> str | None:
    if job_state != jobs.DONE:
        return None
    return "signed_off" if signed else ("in_review" if reviewed else "pending")


def _job_fields(job: Any) -> dict[str, Any]:
    """The summary fields a Job row (or a row of its columns) carries."""
    return dict(id=job.id, state=job.state, task_id=job.task_id, submission_id=job.submission_id,
                submitted_by=job.submitted_by, attempts=job.attempts, max_attempts=job.max_attempts, worker=job.worker,
                error=job.error, created_at=iso(job.created_at), started_at=iso(job.started_at),
                finished_at=iso(job.finished_at))


def _view(session: Session, job: Job, *, full: bool) -> Evaluation:
    signed = session.get(SignOff, job.id)
    reviewed = job.state == jobs.DONE and bool(
        session.scalar(select(func.count()).select_from(ReviewRow).where(ReviewRow.job_id == job.id)))
    view = Evaluation(review_state=_review_state(job.state, signed is not None, reviewed), **_job_fields(job))
    if job.state == jobs.DONE and (row := session.execute(select(DraftRow.flag_codes, DraftRow.uncalibrated)
                                                          .where(DraftRow.job_id == job.id)).first()) is not None:
        view.flags, view.calibrated = row.flag_codes.split(), row.uncalibrated == 0
    if full and (found := get_draft(session, job.id)) is not None:
        draft, epoch = found
        view.draft, view.epoch = draft, epoch
        view.reviews, view.criteria = review.history(session, job.id, draft, epoch)
        view.sign_off = review.sign_off_view(signed)
    return view


def list_queue(store: Store, principal: Principal, *, state: str | None = None, task: str | None = None,
               reviewer: str | None = None, flag: str | None = None, calibrated: bool | None = None,
               offset: int = 0, limit: int = 50) -> EvaluationPage:
    """The review queue, oldest first. `state` is a job state or needs_review / signed_off;
    `reviewer` keeps evaluations that key (id or name) has reviewed or signed off; `flag` keeps drafts
    carrying that flag code ('any': some flag, 'none': no flag); `calibrated` keeps drafts whose every
    judged criterion is (True) or is not (False) calibrated."""
    if state is not None and state not in QUEUE_STATES:
        raise Invalid(f"unknown state {state!r}; expected one of {', '.join(QUEUE_STATES)}", field="state")
    signed = exists().where(SignOff.job_id == Job.id)
    query = select(Job).where(Job.kind == KIND)
    if state == "needs_review":
        query = query.where(Job.state == jobs.DONE, ~signed)
    elif state == "signed_off":
        query = query.where(signed)
    elif state is not None:
        query = query.where(Job.state == state)
    if task:
        query = query.where(Job.task_id == task)
    if flag is not None:
        if not FLAG_FILTER.match(flag):
            raise Invalid(f"bad flag {flag!r}: a flag code, 'any' or 'none'", field="flag")
        flags = {"any": DraftRow.flag_codes != "", "none": DraftRow.flag_codes == ""}.get(
            flag, DraftRow.flag_codes.contains(f" {flag} ", autoescape=True))
        query = query.where(exists().where(DraftRow.job_id == Job.id, flags))
    if calibrated is not None:
        query = query.where(exists().where(DraftRow.job_id == Job.id,
                                           (DraftRow.uncalibrated == 0) if calibrated else (DraftRow.uncalibrated > 0)))
    if reviewer:
        authors = review.author_ids(store, reviewer)
        query = query.where(exists().where(ReviewRow.job_id == Job.id, ReviewRow.author.in_(authors))
                            | exists().where(SignOff.job_id == Job.id, SignOff.author.in_(authors)))
    if not principal.may("reviewer"):
        query = query.where(Job.submitted_by == principal.id)
    # One query for the page's rows (the job's columns, its draft's queue fields, whether it is reviewed
    # and signed off) and one for the total, whatever the page size.
    # (The draft is joined under an alias so the filters' EXISTS over drafts stay correlated to the job only.)
    drafted = aliased(DraftRow)
    listed = (query.with_only_columns(*SUMMARY_COLUMNS, drafted.flag_codes, drafted.uncalibrated,
                                      signed.label("signed"), exists().where(ReviewRow.job_id == Job.id).label("reviewed"))
              .outerjoin(drafted, drafted.job_id == Job.id)
              .order_by(Job.created_at, Job.id).offset(offset).limit(limit))
    with store.read() as session:
        total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
        items = [_summary_of(row) for row in session.execute(listed)]
    return EvaluationPage(items=items, total=total, offset=offset, limit=limit)


SUMMARY_COLUMNS = (Job.id, Job.state, Job.task_id, Job.submission_id, Job.submitted_by, Job.attempts, Job.max_attempts,
                   Job.worker, Job.error, Job.created_at, Job.started_at, Job.finished_at)


def _summary_of(row: Any) -> EvaluationSummary:
    drafted = row.state == jobs.DONE and row.flag_codes is not None
    return EvaluationSummary(review_state=_review_state(row.state, row.signed, row.reviewed), **_job_fields(row),
                             flags=row.flag_codes.split() if drafted else [],
                             calibrated=row.uncalibrated == 0 if drafted else None)


def get_submission_of(store: Store, principal: Principal, evaluation_id: str) -> Submission | None:
    """The stored submission (manifest and file texts) of an evaluation the principal may see."""
    with store.read() as session:
        job = _visible(principal, session.get(Job, evaluation_id))
        return get_submission(session, job.submission_id) if job.submission_id else None
