"""Calibration runs (leads) and reviewer certification, through grader.service.calibration, the
functions behind /v1/calibration-runs and /v1/reviewers/{id}/calibration.

Confusion matrices are HTML tables (the count in every cell, the shade only repeating it): fast,
readable by screen readers, and allowed by the strict CSP. The calibration report's own renderer
(matplotlib heatmaps, grader.reports.calibration_html) serves the full report one click away.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import ValidationError
from starlette.responses import HTMLResponse, Response

from evidence.validation import one_line
from grader.consistency.compare import CriterionAgreement
from grader.service import calibration as service
from grader.service.errors import ServiceError
from grader.store.keys import list_keys
from grader.web.context import UI, PageContext, PageError, form, page

router = APIRouter()
RunId = Path(min_length=1, max_length=64)
SHADES = 4
# The stored report is the calibration engineer's self-contained document, with its own inline styles.
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'"


def heat_rows(c: CriterionAgreement) -> list[list[tuple[int, int]]]:
    """The confusion matrix as rows of (count, shade 0..SHADES)."""
    matrix = c.agreement.confusion
    peak = max((n for row in matrix for n in row), default=0)
    return [[(n, 0 if n == 0 else max(1, round(SHADES * n / peak))) for n in row] for row in matrix]


def _runs_page(ctx: PageContext, *, status: int = 200, error: str | None = None, values: dict | None = None) -> Response:
    runs, total = service.list_runs(ctx.store, limit=100)
    return ctx.html("calibration_runs.html.j2", status=status, nav="calibration", runs=runs, total=total,
                    sets=sorted(service.known_sets()), error=error, values=values or {})


@router.get("/calibration")
def runs(ctx: PageContext = Depends(page("lead"))) -> Response:
    return _runs_page(ctx)


@router.post("/calibration")
def start_run(request: Request, ctx: PageContext = Depends(form("lead"))) -> Response:
    data = request.state.form
    fields = {k: data[k] for k in ("set", "drafter", "model", "samples", "resamples") if data.get(k, "").strip()}
    try:
        view = service.submit_run(ctx.store, ctx.settings, ctx.who, service.CalibrationRequest.model_validate(fields))
    except ValidationError as exc:
        return _runs_page(ctx, status=422, error=one_line(exc), values=data)
    except ServiceError as exc:
        return _runs_page(ctx, status=exc.status, error=exc.one_line(), values=data)
    return ctx.redirect(f"{UI}/calibration/{view.id}")


@router.get("/calibration/{run_id}")
def run_page(ctx: PageContext = Depends(page("lead")), run_id: str = RunId) -> Response:
    view = service.get_run(ctx.store, run_id)
    r = view.report
    return ctx.html("calibration_run.html.j2", nav="calibration", run=view, r=r, heat_rows=heat_rows,
                    worst=r.disagreements(15) if r else [], refresh=3 if view.state in ("queued", "running") else None,
                    labels=r.overall.agreement.labels if r else [])


@router.get("/calibration/{run_id}/report")
def full_report(ctx: PageContext = Depends(page("lead")), run_id: str = RunId) -> Response:
    view = service.get_run(ctx.store, run_id)
    if view.report is None:
        raise PageError(409, f"calibration run {run_id} is {view.state}; its report exists once it is done")
    from grader.reports.calibration_html import render_calibration_html

    return HTMLResponse(render_calibration_html(view.report), headers={"content-security-policy": REPORT_CSP})


@router.get("/reviewers")
def reviewers(ctx: PageContext = Depends(page("lead")), set: str = Query("", max_length=100)) -> Response:
    people = [k for k in list_keys(ctx.store) if k.revoked_at is None and k.role in ("reviewer", "lead", "admin")]
    return ctx.html("reviewers.html.j2", nav="certification", people=people, sets=sorted(service.known_sets()),
                    chosen=set or next(iter(sorted(service.known_sets())), ""))


@router.get("/reviewers/me")
def my_certification(ctx: PageContext = Depends(page("reviewer")), set: str = Query("", max_length=100)) -> Response:
    return ctx.redirect(f"{UI}/reviewers/{ctx.who.id}" + (f"?set={quote(set)}" if set else ""))


@router.get("/reviewers/{reviewer_id}")
def reviewer_page(ctx: PageContext = Depends(page("reviewer")), reviewer_id: str = Path(min_length=1, max_length=100),
                  set: str = Query("", max_length=100)) -> Response:
    sets = sorted(service.known_sets())
    chosen = set or (sets[0] if sets else "")
    names = ctx.names()
    if reviewer_id not in names and reviewer_id not in names.values():
        raise PageError(404, f"no reviewer {reviewer_id!r}")
    result, problem = None, None
    try:
        result = service.reviewer_calibration(ctx.store, ctx.settings, ctx.who, reviewer_id, chosen)
    except ServiceError as exc:
        if exc.status == 403:
            raise
        problem = exc.one_line()  # no scores yet, or no run to stand beside: said on the page
    return ctx.html("reviewer.html.j2", nav="certification", reviewer_id=reviewer_id, names=names, sets=sets,
                    chosen=chosen, result=result, problem=problem)

