"""Rubrics: list and show the shipped rubrics."""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Path

from grader.api.auth import require
from grader.api.models import ERRORS, RubricSummary
from grader.rubric import Rubric, available_rubrics, load_rubric

router = APIRouter(tags=["rubrics"], responses=ERRORS, dependencies=[Depends(require("submitter"))])


@router.get("/v1/rubrics", response_model=list[RubricSummary])
def list_rubrics() -> list[RubricSummary]:
    out = []
    for rid in available_rubrics():
        r = load_rubric(rid)
        out.append(RubricSummary(id=r.id, version=r.version, title=r.title, criteria=[c.id for c in r.criteria]))
    return out


@router.get("/v1/rubrics/{rubric_id}", response_model=Rubric)
def get_rubric(rubric_id: str = Path(max_length=100)) -> Rubric:
    if rubric_id not in available_rubrics():
        raise HTTPException(404, f"unknown rubric {rubric_id!r}; available: {sorted(available_rubrics())}")
    return load_rubric(rubric_id)
