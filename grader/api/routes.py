"""Thin routers: parse, delegate to grader.evaluate off the event loop, map errors to status codes."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from starlette.concurrency import run_in_threadpool

from grader.api.models import EvaluationRequest, RubricSummary
from grader.draft import Draft
from grader.errors import GraderError, RubricError, SubmissionError, SubmissionTooLarge
from grader.evaluate import evaluate
from grader.rubric import Rubric, available_rubrics, load_rubric
from grader.settings import Settings
from grader.submission import Limits, submission_from_upload

router = APIRouter()


def _status(exc: GraderError) -> int:
    if isinstance(exc, SubmissionTooLarge):
        return 413
    if isinstance(exc, SubmissionError | RubricError):
        return 422
    return 400


@router.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/v1/rubrics", response_model=list[RubricSummary])
def list_rubrics() -> list[RubricSummary]:
    out = []
    for rid in available_rubrics():
        r = load_rubric(rid)
        out.append(RubricSummary(id=r.id, version=r.version, title=r.title, criteria=[c.id for c in r.criteria]))
    return out


@router.get("/v1/rubrics/{rubric_id}", response_model=Rubric)
def get_rubric(rubric_id: str) -> Rubric:
    if rubric_id not in available_rubrics():
        raise HTTPException(404, f"unknown rubric {rubric_id!r}; available: {sorted(available_rubrics())}")
    return load_rubric(rubric_id)


@router.post("/v1/evaluations", response_model=Draft, responses={413: {}, 422: {}})
async def create_evaluation(body: EvaluationRequest, request: Request) -> Draft:
    base: Settings = request.app.state.settings
    overrides = {k: v for k, v in {"drafter": body.drafter, "model": body.model, "samples": body.samples}.items() if v}
    if body.no_cache:
        overrides["use_cache"] = False
    settings = base.model_copy(update=overrides)
    rubric_id = body.rubric or settings.rubric
    if rubric_id not in available_rubrics():  # uploads may name shipped rubrics only, never paths
        raise HTTPException(422, f"unknown rubric {rubric_id!r}; available: {sorted(available_rubrics())}")

    def work() -> Draft:
        submission = submission_from_upload(body.manifest, body.files, Limits.from_settings(settings))
        from grader.consistency.store import JsonFileStore

        return evaluate(submission, rubric=load_rubric(rubric_id), settings=settings, store=JsonFileStore(settings.data_dir))

    try:
        return await run_in_threadpool(work)
    except GraderError as exc:
        raise HTTPException(_status(exc), exc.one_line()) from exc
