"""Grader audits: re-grade a frozen set, report drift against earlier results and perturbation invariance.

    report = run_audit("evals/audit", settings=Settings(drafter="rules"), against="epoch:..." or "run.json")

Each item is graded as is and under every perturbation (`perturb.py`); all variants go through one
executor call. Drift compares this epoch's outcomes with an earlier audit or calibration run (from
the store by epoch, or a report file), per criterion: changed outcomes and QWK between the epochs.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from grader.consistency import stats
from grader.consistency.audit_report import (AuditReport, Drift, DriftChange, DriftRow, InjectionResult,
                                             PerturbationCase, PerturbationRow)
from grader.consistency.calibrate import check_gates, item_outcomes, item_record, measure
from grader.consistency.compare import Outcome
from grader.consistency.epochs import calibration_epoch, drafter_info
from grader.consistency.executor import Executor, LocalExecutor
from grader.consistency.goldset import CalibrationError, GoldSet, load_gold_set
from grader.consistency.grading import GradeResult, GradeTask, grade
from grader.consistency.perturb import PERTURBATIONS, perturb
from grader.consistency.report import CalibrationReport, ItemOutcome, RunReport, SetRef
from grader.consistency.stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from grader.consistency.store import load_report_file
from grader.draft import Draft, RubricRef
from grader.rubric import Rubric, load_rubric
from grader.settings import Settings
from grader.submission import Limits, load_submission

INJECTION_KIND = "injection.attempt"
Progress = Callable[[str, GradeResult], None]


def _outcome(draft: Draft | None, criterion_id: str) -> Outcome:
    if draft is None:
        return "unscored"
    c = draft.criterion(criterion_id)
    return c.score if c.status == "scored" and c.score is not None else c.status


def stored_results(store: Any, set_name: str, rubric_id: str, epoch: str | None) -> CalibrationReport | AuditReport | None:
    """From a run store: the newest audit of the set (of `epoch`, when given), else the newest
    calibration run of `epoch`; None when there is nothing to compare with."""
    audits = [s for s in store.list_audits(epoch=epoch, rubric=rubric_id) if s.set_name == set_name]
    if audits:
        return store.get_audit(audits[-1].id)
    return store.latest_run(epoch, rubric_id) if epoch is not None else None


def _earlier(against: str | RunReport | None, store: Any, gold: GoldSet,
             rubric: Rubric) -> CalibrationReport | AuditReport | None:
    """The results to compare with: a report the caller loaded, a report file, the newest stored run
    of an epoch, or (no `against`) the newest stored audit of the same set."""
    if isinstance(against, RunReport):
        return against  # type: ignore[return-value]
    if against is not None and (against.endswith(".json") or Path(against).is_file()):
        return load_report_file(against)
    if store is None:
        if against is None:
            return None
        raise CalibrationError("an epoch needs the run store (drop --no-store)", where="--against")
    found = stored_results(store, gold.name, rubric.id, against)
    if found is None and against is not None:
        raise CalibrationError(f"no stored audit or calibration run of epoch {against!r} for set {gold.name}", where="--against")
    return found


def drift(before: CalibrationReport | AuditReport, outcomes: list[ItemOutcome], rubric: Rubric, epoch: str) -> Drift:
    labels = list(range(rubric.scale_min, rubric.scale_max + 1))
    old = {(o.item, o.criterion_id): (o.score if o.status == "scored" else o.status) for o in before.outcomes}
    rows, changes = [], []
    for crit in rubric.criteria:
        pairs = [(o.item, old[(o.item, crit.id)], o.score if o.status == "scored" else o.status)
                 for o in outcomes if o.criterion_id == crit.id and (o.item, crit.id) in old]
        moved = [DriftChange(item=i, criterion_id=crit.id, before=a, after=b) for i, a, b in pairs if a != b]
        changes += moved
        scored = [(a, b) for _, a, b in pairs if isinstance(a, int) and isinstance(b, int)]
        ga = np.array([a for a, _ in scored], dtype=float)
        gb = np.array([b for _, b in scored], dtype=float)
        rows.append(DriftRow(criterion_id=crit.id, n=len(pairs), changed=len(moved),
                             qwk=stats.defined(stats.qwk(ga, gb, labels)) if scored else None,
                             exact=stats.defined(stats.exact(ga, gb)) if scored else None))
    items_before = {o.item for o in before.outcomes}
    return Drift(against=before.id, against_epoch=before.epoch.hash, same_epoch=before.epoch.hash == epoch,
                 rows=tuple(rows), changes=tuple(changes),
                 missing_items=tuple(sorted({o.item for o in outcomes} - items_before)))


def run_audit(
    set_path: str | Path | GoldSet,
    *,
    rubric: Rubric | str | None = None,
    settings: Settings | None = None,
    executor: Executor | None = None,
    against: str | RunReport | None = None,
    perturbations: tuple[str, ...] = PERTURBATIONS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
    store: Any = None,
) -> AuditReport:
    settings = settings or Settings()
    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric or settings.rubric, settings.rubric_dirs())
    check_gates(rub, None)
    unknown = sorted(set(perturbations) - set(PERTURBATIONS))
    if unknown:
        raise CalibrationError(f"unknown perturbation(s) {unknown}; known: {', '.join(PERTURBATIONS)}")
    limits = Limits.from_settings(settings)
    gold = set_path if isinstance(set_path, GoldSet) else load_gold_set(set_path, rub, limits=limits)
    epoch = calibration_epoch(rub, settings)
    earlier = _earlier(against, store, gold, rub)  # bad --against fails before any grading
    start = time.perf_counter()
    tasks: list[GradeTask] = []
    skipped: dict[tuple[str, str], bool] = {}
    dump = settings.model_dump()
    for item in gold.items:
        sub = load_submission(item.path, limits)
        tasks.append(GradeTask(item=item.id, submission=sub, rubric=rub, settings=dump))
        for p in perturbations:
            variant = perturb(sub, p)
            if variant is None:
                skipped[(item.id, p)] = True
            else:
                tasks.append(GradeTask(item=f"{item.id}#{p}", submission=variant, rubric=rub, settings=dump))
    ex = executor or LocalExecutor(1)
    results = ex.map(grade, tasks, on_done=(lambda i, r: progress(tasks[i].item, r)) if progress else None)
    by_task = {t.item: r for t, r in zip(tasks, results)}
    originals = [by_task[i.id] for i in gold.items]
    outcomes = item_outcomes(gold, rub, originals)
    per, overall = measure(outcomes, rub, None, resamples, seed)

    rows, unstable, injection, errors = [], [], [], []
    for p in perturbations:
        for crit in rub.criteria:
            n = stable = na = 0
            for item in gold.items:
                if skipped.get((item.id, p)):
                    na += 1
                    continue
                base, var = by_task[item.id], by_task[f"{item.id}#{p}"]
                a, b = _outcome(base.draft, crit.id), _outcome(var.draft, crit.id)
                n += 1
                if a == b:
                    stable += 1
                else:
                    unstable.append(PerturbationCase(item=item.id, perturbation=p, criterion_id=crit.id, original=a, perturbed=b))
            rows.append(PerturbationRow(perturbation=p, criterion_id=crit.id, n=n, stable=stable, not_applicable=na))
    for t, r in zip(tasks, results):
        if r.error:
            errors.append(f"{t.item}: {r.error}")
    if "injection" in perturbations:
        for item in gold.items:
            var = by_task.get(f"{item.id}#injection")
            if var is None:
                continue
            detected = var.draft is not None and any(i.kind == INJECTION_KIND for i in var.draft.evidence.items)
            raised = tuple(c.id for c in rub.criteria
                           if isinstance(b := _outcome(var.draft, c.id), int)
                           and (not isinstance(a := _outcome(by_task[item.id].draft, c.id), int) or b > a))
            injection.append(InjectionResult(item=item.id, detected=detected, raised=raised))

    report = AuditReport(
        id=f"aud-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}",
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        set=SetRef(name=gold.name, path=gold.path, hash=gold.hash, items=len(gold.items)),
        rubric=RubricRef(id=rub.id, version=rub.version, hash=rub.content_hash), epoch=epoch,
        drafter=drafter_info(settings), executor=getattr(ex, "name", "custom"), workers=getattr(ex, "workers", 1),
        duration_s=round(time.perf_counter() - start, 2), criteria=tuple(per), overall=overall,
        outcomes=tuple(outcomes), items=tuple(item_record(i.id, r) for i, r in zip(gold.items, originals)),
        drift=drift(earlier, outcomes, rub, epoch.hash) if earlier is not None else None,
        perturbation=tuple(rows), unstable=tuple(unstable), injection=tuple(injection),
        graded_variants=len(tasks) - len(gold.items), errors=tuple(errors),
    )
    if store is not None:
        store.save_audit(report)
    return report
