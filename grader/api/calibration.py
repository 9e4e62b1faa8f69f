"""Calibration runs (durable jobs; JSON or the HTML report), reviewer scores and reviewer calibration."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import HTMLResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from grader.api.auth import require
from grader.api.models import ERRORS
from grader.service import calibration as service
from grader.service.calibration import (
    CalibrationRequest,
    CalibrationRunView,
    ReviewerCalibrationView,
    ReviewerScoresRequest,
)
from grader.service.run_jobs import RunJobView
from grader.store.keys import Principal

router = APIRouter(tags=["calibration"], responses=ERRORS)


V = TypeVar("V", bound=RunJobView)


async def report_or_html(request: Request, view: V, render: Callable[[Any], str]) -> V | HTMLResponse:
    """A run's view as JSON, or its finished report as one self-contained page for `Accept: text/html`."""
    if view.report is not None and "text/html" in request.headers.get("accept", ""):
        return HTMLResponse(await run_in_threadpool(render, view.report))
    return view


class ScoresStored(BaseModel):
    stored: int


@router.post("/v1/calibration-runs", status_code=202, response_model=CalibrationRunView)
async def start_run(body: CalibrationRequest, request: Request, response: Response,
                    who: Principal = Depends(require("lead"))) -> CalibrationRunView:
    """Run a calibration set known to the server as a durable job (202 with Location)."""
    view = await run_in_threadpool(service.submit_run, request.app.state.store, request.app.state.settings, who, body)
    response.headers["Location"] = f"/v1/calibration-runs/{view.id}"
    return view


@router.get("/v1/calibration-runs/{run_id}", response_model=CalibrationRunView,
            responses={200: {"content": {"text/html": {}}}})
async def get_run(request: Request, run_id: str = Path(min_length=1, max_length=64),
                  _: Principal = Depends(require("lead"))) -> CalibrationRunView | HTMLResponse:
    """The run's state and report (JSON), or the HTML report with `Accept: text/html`."""
    from grader.reports.calibration_html import render_calibration_html

    view = await run_in_threadpool(service.get_run, request.app.state.store, run_id)
    return await report_or_html(request, view, render_calibration_html)


@router.post("/v1/reviewer-scores", response_model=ScoresStored)
async def post_scores(body: ReviewerScoresRequest, request: Request,
                      who: Principal = Depends(require("reviewer"))) -> ScoresStored:
    """The caller's scores for calibration items (the newest score per item and criterion counts)."""
    n = await run_in_threadpool(service.submit_scores, request.app.state.store, request.app.state.settings, who, body)
    return ScoresStored(stored=n)


@router.get("/v1/reviewers/{reviewer_id}/calibration", response_model=ReviewerCalibrationView)
async def reviewer_calibration(request: Request, reviewer_id: str = Path(min_length=1, max_length=100),
                               set: str = Query(..., min_length=1, max_length=100),
                               who: Principal = Depends(require("reviewer"))) -> ReviewerCalibrationView:
    """A reviewer's agreement with gold and certification per criterion (their own; leads: anyone's)."""
    return await run_in_threadpool(service.reviewer_calibration, request.app.state.store, request.app.state.settings,
                                   who, reviewer_id, set)
