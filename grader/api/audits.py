"""Audits (durable jobs; the report as JSON, or the HTML report): drift and perturbation stability."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Request, Response
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from grader.api.auth import require
from grader.api.calibration import report_or_html
from grader.api.models import ERRORS
from grader.service import audits as service
from grader.service.audits import AuditRequest, AuditView
from grader.store.keys import Principal

router = APIRouter(tags=["audits"], responses=ERRORS)


@router.post("/v1/audits", status_code=202, response_model=AuditView)
async def start_audit(body: AuditRequest, request: Request, response: Response,
                      who: Principal = Depends(require("lead"))) -> AuditView:
    """Audit a set known to the server as a durable job (202 with Location): drift and perturbation stability."""
    view = await run_in_threadpool(service.submit_audit, request.app.state.store, request.app.state.settings, who, body)
    response.headers["Location"] = f"/v1/audits/{view.id}"
    return view


@router.get("/v1/audits/{audit_id}", response_model=AuditView, responses={200: {"content": {"text/html": {}}}})
async def get_audit(request: Request, audit_id: str = Path(min_length=1, max_length=64),
                    _: Principal = Depends(require("reviewer"))) -> AuditView | HTMLResponse:
    """The audit's state and report (JSON), or the HTML report with `Accept: text/html`."""
    from grader.reports.audit_html import render_audit_html

    view = await run_in_threadpool(service.get_audit, request.app.state.store, audit_id)
    return await report_or_html(request, view, render_audit_html)
