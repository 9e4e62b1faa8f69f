"""Evaluations: submit (202 + job), poll, list the review queue, review, sign off. Thin: each handler
delegates to grader.service off the event loop."""

from __future__ import annotations

import asyncio
import time

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from grader.api.auth import require
from grader.api.models import ERRORS, EvaluationRequest
from grader.service import evaluations as service
from grader.service import review
from grader.service.views import Evaluation, EvaluationPage, ReviewRequest, SignOffRequest
from grader.store.keys import Principal

router = APIRouter(prefix="/v1/evaluations", tags=["evaluations"], responses=ERRORS)
EvaluationId = Path(min_length=1, max_length=64, description="the evaluation (job) id")


@router.post("", status_code=202, response_model=Evaluation,
             responses={200: {"model": Evaluation, "description": "the finished evaluation (within ?wait)"}})
async def submit(
    body: EvaluationRequest,
    request: Request,
    response: Response,
    wait: float = Query(0, ge=0, le=600, description="seconds to wait for the draft before answering 202"),
    idempotency_key: str | None = Header(None, min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$"),
    who: Principal = Depends(require("submitter")),
) -> Evaluation:
    """Queue an evaluation (202 with its id and Location), or return it finished when `wait` allows."""
    store, settings = request.app.state.store, request.app.state.settings
    options = service.EvaluationOptions(rubric=body.rubric, drafter=body.drafter, model=body.model,
                                        samples=body.samples, no_cache=body.no_cache)
    view, _ = await run_in_threadpool(service.submit, store, settings, who, body.manifest, body.files, options,
                                      idempotency_key)
    response.headers["Location"] = f"/v1/evaluations/{view.id}"
    deadline = time.monotonic() + min(wait, settings.max_wait_s)
    while view.state in ("queued", "running") and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        view = await run_in_threadpool(service.get, store, who, view.id)
    if view.state in ("done", "failed"):
        response.status_code = 200
        if view.draft is None:
            view = await run_in_threadpool(service.get, store, who, view.id)
    return view


@router.get("", response_model=EvaluationPage)
async def list_queue(
    request: Request,
    state: str | None = Query(None, max_length=32, description="queued | running | done | failed | needs_review | signed_off"),
    task: str | None = Query(None, max_length=255),
    reviewer: str | None = Query(None, max_length=100, description="key id or name of a reviewer"),
    flag: str | None = Query(None, max_length=64, description="a flag code on any criterion, 'any' or 'none'"),
    calibrated: bool | None = Query(None, description="every judged criterion calibrated (true) or not (false)"),
    offset: int = Query(0, ge=0, le=10**9),
    limit: int = Query(50, ge=1, le=200),
    who: Principal = Depends(require("submitter")),
) -> EvaluationPage:
    """The review queue, oldest first (submitters see their own evaluations only)."""
    return await run_in_threadpool(service.list_queue, request.app.state.store, who, state=state, task=task,
                                   reviewer=reviewer, flag=flag, calibrated=calibrated, offset=offset, limit=limit)


@router.get("/{evaluation_id}", response_model=Evaluation)
async def get_evaluation(request: Request, evaluation_id: str = EvaluationId,
                         who: Principal = Depends(require("submitter"))) -> Evaluation:
    """State (queued, running, done, failed with a one-line reason), the draft, reviews and sign-off."""
    return await run_in_threadpool(service.get, request.app.state.store, who, evaluation_id)


@router.post("/{evaluation_id}/reviews", response_model=Evaluation)
async def post_review(body: ReviewRequest, request: Request, evaluation_id: str = EvaluationId,
                      who: Principal = Depends(require("reviewer"))) -> Evaluation:
    """Per criterion: accept, or edit the score with a mandatory reason."""
    return await run_in_threadpool(review.submit_review, request.app.state.store, who, evaluation_id, body.decisions)


@router.post("/{evaluation_id}/sign-off", response_model=Evaluation)
async def post_sign_off(request: Request, body: SignOffRequest | None = None, evaluation_id: str = EvaluationId,
                        who: Principal = Depends(require("reviewer"))) -> Evaluation:
    """Make the evaluation final (not by its submitter; blockers acknowledged first)."""
    return await run_in_threadpool(review.sign_off, request.app.state.store, who, evaluation_id,
                                   body.comment if body else None)
