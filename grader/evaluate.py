"""The whole path for one submission: load, gather evidence, draft against a rubric."""

from __future__ import annotations

from pathlib import Path

from evidence.gather import gather
from evidence.model import EvidenceBundle
from evidence.submission import Submission
from grader.draft import Draft
from grader.drafting import Drafter, make_drafter
from grader.rubric import Rubric, load_rubric
from grader.settings import Settings
from grader.submission import Limits, load_submission


def as_submission(submission: Submission | str | Path, settings: Settings | None = None) -> Submission:
    if isinstance(submission, Submission):
        return submission
    limits = Limits.from_settings(settings) if settings else Limits()
    return load_submission(submission, limits)


def evaluate(
    submission: Submission | str | Path,
    *,
    rubric: Rubric | str | None = None,
    drafter: Drafter | None = None,
    settings: Settings | None = None,
    bundle: EvidenceBundle | None = None,
) -> Draft:
    """Draft an evaluation. With no drafter and no model configured, the rules drafter is used."""
    settings = settings or Settings()
    sub = as_submission(submission, settings)
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric or settings.rubric)
    bundle = bundle or gather(sub, options=settings.collector_options())
    return (drafter or make_drafter(settings)).draft(sub, bundle, rub)
