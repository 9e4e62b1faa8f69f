"""Audits and drift (leads): grader-consistency audits stored by the service (`run_store`, the same
RunStore the consistency check and the API use): drift of each criterion against an earlier epoch,
perturbation invariance, injection detection, and the cases that moved."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path
from starlette.responses import Response

from grader.consistency.store import StoreError
from grader.service.runs import run_store
from grader.web.context import PageContext, PageError, page

router = APIRouter()


@router.get("/audits")
def audits(ctx: PageContext = Depends(page("lead"))) -> Response:
    runs = list(reversed(run_store(ctx.store, ctx.settings).list_audits()))
    return ctx.html("audits.html.j2", nav="audits", runs=runs)


@router.get("/audits/{audit_id}")
def audit_page(ctx: PageContext = Depends(page("lead")), audit_id: str = Path(min_length=1, max_length=100)) -> Response:
    try:
        report = run_store(ctx.store, ctx.settings).get_audit(audit_id)
    except StoreError as exc:
        raise PageError(404, f"no audit {audit_id!r}") from exc
    perturbations = sorted({r.perturbation for r in report.perturbation})
    grid = {(r.perturbation, r.criterion_id): r for r in report.perturbation}
    return ctx.html("audit.html.j2", nav="audits", a=report, perturbations=perturbations, grid=grid,
                    criteria=[c.criterion_id for c in report.criteria])
