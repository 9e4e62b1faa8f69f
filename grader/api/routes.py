"""Rubrics: list and show the rubrics on the server's search path (GRADER_RUBRIC_PATH, then the shipped ones)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Path, Request

from grader.api.auth import require
from grader.api.models import ERRORS, RubricSummary
from grader.rubric import Rubric, available_rubrics, load_rubric, unknown_rubric

router = APIRouter(tags=["rubrics"], responses=ERRORS, dependencies=[Depends(require("submitter"))])


@router.get("/v1/rubrics", response_model=list[RubricSummary])
def list_rubrics(request: Request) -> list[RubricSummary]:
    dirs = request.app.state.settings.rubric_dirs()
    out = []
    for rid in available_rubrics(dirs):
        r = load_rubric(rid, dirs)
        out.append(RubricSummary(id=r.id, version=r.version, title=r.title, criteria=[c.id for c in r.criteria]))
    return out


@router.get("/v1/rubrics/{rubric_id}", response_model=Rubric)
def get_rubric(request: Request, rubric_id: str = Path(max_length=100)) -> Rubric:
    dirs = request.app.state.settings.rubric_dirs()
    if rubric_id not in available_rubrics(dirs):
        raise HTTPException(404, unknown_rubric(rubric_id, dirs).one_line())
    return load_rubric(rubric_id, dirs)
