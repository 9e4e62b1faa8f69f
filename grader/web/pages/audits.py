"""Audits and drift, through grader.service.audits (the functions behind /v1/audits): a lead starts an
audit of a gold set the server has as a durable job; its page shows drift of each criterion against
earlier results, the perturbation stability grid and the cases that moved, and injection detection.
The consistency report's own renderer (grader.reports.audit_html) serves the full report."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Request
from pydantic import ValidationError
from starlette.responses import HTMLResponse, Response

from evidence.validation import one_line
from grader.consistency.perturb import PERTURBATIONS
from grader.service import audits as service
from grader.service.errors import ServiceError
from grader.web.context import UI, PageContext, PageError, form, page
from grader.web.pages.calibration import REPORT_CSP

router = APIRouter()
AuditId = Path(min_length=1, max_length=64)


def _audits_page(ctx: PageContext, *, status: int = 200, error: str | None = None, values: dict | None = None,
                 chosen: list[str] | None = None) -> Response:
    runs, total = service.list_audits(ctx.store, limit=100)
    return ctx.html("audits.html.j2", status=status, nav="audits", runs=runs, total=total,
                    sets=sorted(service.known_sets()), perturbations=PERTURBATIONS, error=error,
                    values=values or {}, chosen=PERTURBATIONS if chosen is None else chosen)


@router.get("/audits")
def audits(ctx: PageContext = Depends(page("lead"))) -> Response:
    return _audits_page(ctx)


@router.post("/audits")
def start_audit(request: Request, ctx: PageContext = Depends(form("lead"))) -> Response:
    data, lists = request.state.form, request.state.form_lists
    fields: dict[str, object] = {k: data[k] for k in ("set", "drafter", "model", "samples", "resamples", "against")
                                 if data.get(k, "").strip()}
    chosen = lists.get("perturbation", [])
    fields["perturbations"] = chosen
    try:
        view = service.submit_audit(ctx.store, ctx.settings, ctx.who, service.AuditRequest.model_validate(fields))
    except ValidationError as exc:
        return _audits_page(ctx, status=422, error=one_line(exc),
                            values=data, chosen=chosen)
    except ServiceError as exc:
        return _audits_page(ctx, status=exc.status, error=exc.one_line(), values=data, chosen=chosen)
    return ctx.redirect(f"{UI}/audits/{view.id}")


@router.get("/audits/{audit_id}")
def audit_page(ctx: PageContext = Depends(page("reviewer")), audit_id: str = AuditId) -> Response:
    view = service.get_audit(ctx.store, audit_id)
    report = view.report
    if report is None:
        return ctx.html("audit.html.j2", nav="audits", run=view, a=None,
                        refresh=3 if view.state in ("queued", "running") else None)
    grid = {(r.perturbation, r.criterion_id): r for r in report.perturbation}
    return ctx.html("audit.html.j2", nav="audits", run=view, a=report, grid=grid, refresh=None,
                    perturbations=sorted({r.perturbation for r in report.perturbation}),
                    criteria=[c.criterion_id for c in report.criteria])


@router.get("/audits/{audit_id}/report")
def full_report(ctx: PageContext = Depends(page("reviewer")), audit_id: str = AuditId) -> Response:
    view = service.get_audit(ctx.store, audit_id)
    if view.report is None:
        raise PageError(409, f"audit {audit_id} is {view.state}; its report exists once it is done")
    from grader.reports.audit_html import render_audit_html

    return HTMLResponse(render_audit_html(view.report), headers={"content-security-policy": REPORT_CSP})
