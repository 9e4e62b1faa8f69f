"""The whole path for one submission: load, gather evidence, draft against a rubric."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evidence.model import EvidenceBundle
from evidence.submission import Submission
from grader import sandbox
from grader.draft import Draft
from grader.drafting import Drafter, make_drafter
from grader.evidence_cache import gather_cached
from grader.rubric import Rubric, load_rubric
from grader.settings import Settings
from grader.submission import Limits, load_submission

if TYPE_CHECKING:
    from grader.consistency.store import RunStore


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
    store: RunStore | None = None,
) -> Draft:
    """Draft an evaluation. With no drafter and no model configured, the rules drafter is used.

    With a calibration `store`, every criterion carries the consistency check against the newest
    calibration run of the draft's grader epoch (grader.consistency.check)."""
    settings = settings or Settings.load()
    sub = as_submission(submission, settings)
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric or settings.rubric, settings.rubric_dirs())
    bundle = bundle or gather_cached(sub, settings.collector_options(), settings.evidence_store())
    draft = (drafter or make_drafter(settings)).draft(sub, bundle, rub)
    draft = draft.model_copy(update={"record": draft.record.model_copy(update={"sandbox": sandbox.record(settings)})})
    if store is None:
        return draft
    from grader.consistency.check import check_draft
    from grader.consistency.epochs import calibration_epoch

    epoch = calibration_epoch(rub, settings).hash
    return check_draft(draft, epoch, store.latest_run(epoch, rub.id))
