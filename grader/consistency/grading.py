"""The unit of work every executor runs: grade one submission, return its draft or the error.

A top-level function over a picklable task, so the local pool and Ray run exactly the same code.
The task carries the submission's files, not a path, so a worker on another machine can grade it.
A failure is a value (the item's criteria count as unscored with the reason), never a lost run.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import BaseModel, ConfigDict

from evidence.submission import Submission
from grader.draft import Draft
from grader.errors import GraderError
from grader.rubric import Rubric


class GradeTask(BaseModel):
    model_config = ConfigDict(frozen=True)

    item: str  # item id in its set (with '#perturbation' for audit variants)
    submission: Submission
    rubric: Rubric
    settings: dict[str, Any]  # Settings fields, rebuilt in the worker


class GradeResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    item: str
    draft: Draft | None = None
    error: str | None = None
    duration_s: float = 0.0


def grade(task: GradeTask) -> GradeResult:
    from grader.evaluate import evaluate
    from grader.settings import Settings

    start = time.perf_counter()
    try:
        draft = evaluate(task.submission, rubric=task.rubric, settings=Settings(**task.settings))
    except GraderError as exc:
        return GradeResult(item=task.item, error=exc.one_line(), duration_s=time.perf_counter() - start)
    except Exception as exc:  # the unit boundary: one item's crash must not lose the run
        return GradeResult(item=task.item, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
                           duration_s=time.perf_counter() - start)
    return GradeResult(item=task.item, draft=draft, duration_s=round(time.perf_counter() - start, 3))
