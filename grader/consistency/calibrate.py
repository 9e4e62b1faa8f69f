"""Calibration runs: grade every item of a gold set, measure the drafter against gold, apply the gates.

    report = run_calibration("evals/calibration/nki-review-v1", settings=Settings(drafter="rules"))

Everything is validated (set, gold files, reviews file) before the first item is graded. Items go
through an executor (`grader.consistency.executor`), at most `workers` at a time; results are
assembled in item order, so the report does not depend on which worker finished first.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evidence.validation import one_line
from grader.consistency.epochs import calibration_epoch, drafter_info
from grader.consistency.compare import CriterionAgreement, Outcome, compare
from grader.consistency.executor import Executor, LocalExecutor
from grader.consistency.goldset import CalibrationError, GoldSet, load_gold_set
from grader.consistency.grading import GradeResult, GradeTask, grade
from grader.consistency.profile import profile
from grader.consistency.report import CalibrationReport, ItemOutcome, ItemRecord, SetRef
from grader.consistency.reviews import ReviewerScore, load_reviews
from grader.consistency.stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from grader.draft import CriterionDraft, Draft, RubricRef
from grader.rubric import Gates, Rubric, load_rubric
from grader.settings import Settings
from grader.submission import Limits, load_submission

Progress = Callable[[str, GradeResult], None]


def check_gates(rubric: Rubric, overrides: dict[str, float] | None) -> None:
    """Unknown or invalid gate overrides are bad input, reported before anything is graded."""
    unknown = sorted(set(overrides or {}) - set(Gates.model_fields))
    if unknown:
        raise CalibrationError(f"unknown gate(s) {unknown}; known: {', '.join(Gates.model_fields)}", where="--gate")
    try:
        Gates.model_validate({**rubric.gates.model_dump(), **(overrides or {})})
    except ValidationError as exc:
        raise CalibrationError(one_line(exc), where="--gate") from exc


def outcome_of(c: CriterionDraft) -> Outcome:
    if c.status == "scored":
        assert c.score is not None
        return c.score
    return c.status  # "not_applicable" | "unscored"


def item_outcomes(gold: GoldSet, rubric: Rubric, results: list[GradeResult]) -> list[ItemOutcome]:
    out = []
    for item, res in zip(gold.items, results):
        for crit in rubric.criteria:
            label = item.labels.get(crit.id)
            base: dict[str, Any] = {"item": item.id, "criterion_id": crit.id,
                                    "gold": label.score if label else None, "gold_rationale": label.rationale if label else ""}
            if res.draft is None:
                out.append(ItemOutcome(**base, status="unscored", reason=f"grading failed: {res.error}"))
                continue
            c = res.draft.criterion(crit.id)
            out.append(ItemOutcome(**base, status=c.status, score=c.score, rationale=c.rationale, reason=c.reason,
                                   citations=c.citations, flags=tuple(f.code for f in c.flags), confidence=c.confidence))
    return out


def measure(outcomes: list[ItemOutcome], rubric: Rubric, gate_overrides: dict[str, float] | None,
            resamples: int, seed: int) -> tuple[list[CriterionAgreement], CriterionAgreement]:
    """Per-criterion and pooled agreement of drafted outcomes with gold."""
    labels = list(range(rubric.scale_min, rubric.scale_max + 1))
    per = []
    pooled: list[tuple[Any, Outcome]] = []
    for crit in rubric.criteria:
        pairs = [(o.gold, o.score if o.status == "scored" else o.status) for o in outcomes if o.criterion_id == crit.id]
        pooled += pairs
        per.append(compare(crit.id, pairs, rubric.gates_for(crit.id, gate_overrides), labels=labels,
                           resamples=resamples, seed=seed))
    overall_gates = Gates.model_validate({**rubric.gates.model_dump(), **(gate_overrides or {})})
    overall = compare("overall", pooled, overall_gates, labels=labels, resamples=resamples, seed=seed)
    return per, overall


def item_record(item_id: str, res: GradeResult) -> ItemRecord:
    d: Draft | None = res.draft
    if d is None:
        return ItemRecord(item=item_id, error=res.error, duration_s=res.duration_s)
    return ItemRecord(item=item_id, task_id=d.task_id, submission_hash=d.submission_hash,
                      bundle_hash=d.evidence.bundle_hash, profile=profile(d.evidence), duration_s=res.duration_s)


def grade_set(gold: GoldSet, rubric: Rubric, settings: Settings, executor: Executor,
              progress: Progress | None = None) -> list[GradeResult]:
    limits = Limits.from_settings(settings)
    tasks = [GradeTask(item=i.id, submission=load_submission(i.path, limits), rubric=rubric, settings=settings.model_dump())
             for i in gold.items]
    return executor.map(grade, tasks, on_done=(lambda i, r: progress(tasks[i].item, r)) if progress else None)


def run_calibration(
    set_path: str | Path | GoldSet,
    *,
    rubric: Rubric | str | None = None,
    settings: Settings | None = None,
    executor: Executor | None = None,
    reviews: str | Path | list[ReviewerScore] | None = None,
    gate_overrides: dict[str, float] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
    store: Any = None,
) -> CalibrationReport:
    """Grade the set, compare with gold (and reviewers), judge the gates; save to `store` when given."""
    settings = settings or Settings()
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric or settings.rubric, settings.rubric_dirs())
    check_gates(rub, gate_overrides)
    gold = set_path if isinstance(set_path, GoldSet) else load_gold_set(set_path, rub, limits=Limits.from_settings(settings))
    review_scores = reviews if isinstance(reviews, list) or reviews is None else load_reviews(reviews, gold, rub)
    executor = executor or LocalExecutor(1)
    start = time.perf_counter()
    results = grade_set(gold, rub, settings, executor, progress)
    outcomes = item_outcomes(gold, rub, results)
    per, overall = measure(outcomes, rub, gate_overrides, resamples, seed)
    reviewer_part = None
    if review_scores:
        from grader.consistency.reviewers import calibrate_reviewers

        reviewer_part = calibrate_reviewers(review_scores, gold, rub, outcomes, gate_overrides, resamples, seed,
                                            source=Path(str(reviews)).name if not isinstance(reviews, list) else "reviews")
    report = CalibrationReport(
        id=f"cal-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}",
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        set=SetRef(name=gold.name, path=gold.path, hash=gold.hash, items=len(gold.items)),
        rubric=RubricRef(id=rub.id, version=rub.version, hash=rub.content_hash),
        epoch=calibration_epoch(rub, settings), drafter=drafter_info(settings),
        executor=getattr(executor, "name", "custom"), workers=getattr(executor, "workers", 1),
        duration_s=round(time.perf_counter() - start, 2), resamples=resamples,
        gates=Gates.model_validate({**rub.gates.model_dump(), **(gate_overrides or {})}),
        gate_overrides=dict(gate_overrides or {}),
        criteria=tuple(per), overall=overall, outcomes=tuple(outcomes),
        items=tuple(item_record(i.id, r) for i, r in zip(gold.items, results)), reviewers=reviewer_part,
    )
    if store is not None:
        store.save_run(report)
    return report
