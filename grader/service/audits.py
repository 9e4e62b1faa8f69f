"""Audits over the service: a gold set the server has, re-graded as a durable job, with drift against
earlier results stored in the database and perturbation stability (grader.consistency.audit).

Drift compares with what `against` names — an epoch, or a stored audit or calibration run by its
report or job id — or, without it, the newest stored audit of the same set. A request never names a
file: the CLI's `--against report.json` has no HTTP counterpart.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, computed_field
from sqlalchemy.orm import Session

from grader.consistency.audit_report import AuditReport
from grader.consistency.perturb import PERTURBATIONS
from grader.consistency.report import RunReport
from grader.service import calibration
from grader.service.errors import Invalid
from grader.service.evaluations import job_settings
from grader.service.run_jobs import (
    EVALS,
    RunJobs,
    RunJobSummary,
    RunJobView,
    RunRequest,
    checked_rubric,
    pick_set,
)
from grader.settings import Settings
from grader.store.db import Store
from grader.store.keys import Principal
from grader.store.models import AuditRun, Job
from grader.store.runs import SqlRunStore

KIND = "audit"
AUDIT_SET = EVALS / "audit"
EPOCH = re.compile(r"^epoch:[0-9a-f]{16}$")


def known_sets() -> dict[str, Path]:
    """The audit set and every calibration set: an audit re-grades any gold set the server has."""
    audit = {AUDIT_SET.name: AUDIT_SET} if AUDIT_SET.is_dir() else {}
    return calibration.known_sets() | audit


class AuditRequest(RunRequest):
    """An audit of a set in evals/ (the audit set or a calibration set)."""

    against: str | None = Field(
        default=None, min_length=1, max_length=100,
        description="drift against an epoch (`epoch:<16 hex>`) or a stored audit or calibration run (report or job id); "
                    "default: the newest stored audit of the set")
    perturbations: list[Literal[PERTURBATIONS]] | None = Field(  # type: ignore[valid-type]
        default=None, max_length=len(PERTURBATIONS), description="default: all")


class AuditView(RunJobView):
    report: AuditReport | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool | None:
        """Every invariant perturbation stable, the injection detected and never raising a score."""
        return None if self.report is None else self.report.passed


AUDITS = RunJobs(KIND, "audit", AuditRun, AuditReport, AuditView)


def earlier(store: Store, set_name: str, rubric: str, against: str | None) -> RunReport | None:
    """The stored results an audit's drift compares with (None: nothing earlier); Invalid when
    `against` names nothing stored."""
    from grader.consistency.audit import stored_results

    runs = SqlRunStore(store)
    if against is None or EPOCH.match(against):
        found = stored_results(runs, set_name, rubric, against)
        if found is None and against is not None:
            raise Invalid(f"no stored audit or calibration run of epoch {against} for set {set_name!r}", field="against")
        return found
    found = runs.find(against)
    if found is None:
        raise Invalid(f"no stored audit or calibration run {against!r} (expected a run id or epoch:<16 hex>)",
                      field="against")
    return found


def submit_audit(store: Store, settings: Settings, principal: Principal, request: AuditRequest) -> AuditView:
    pick_set(request.set, known_sets(), "audit")
    rubric = checked_rubric(request.rubric, settings)
    earlier(store, request.set, rubric, request.against)  # a bad `against` is a 422 now, not a failed job later
    return AUDITS.submit(store, settings, principal, request.model_dump() | {"rubric": rubric})


def get_audit(store: Store, audit_id: str) -> AuditView:
    return AUDITS.get(store, audit_id)


def list_audits(store: Store, *, offset: int = 0, limit: int = 50) -> tuple[list[RunJobSummary], int]:
    """Audit jobs, newest first, with the total count."""
    return AUDITS.list_jobs(store, offset=offset, limit=limit)


def run_audit_job(store: Store, settings: Settings, job: Job):  # type: ignore[no-untyped-def]
    """Worker side: grade the set and its perturbed variants; the audit is stored when the job finishes."""
    from grader.consistency.audit import run_audit
    from grader.consistency.executor import LocalExecutor

    p = job.params
    chosen = PERTURBATIONS if p.get("perturbations") is None else tuple(p["perturbations"])
    report = run_audit(pick_set(p["set"], known_sets(), "audit"), rubric=p["rubric"],
                       settings=job_settings(settings, p), executor=LocalExecutor(1),
                       against=earlier(store, p["set"], p["rubric"], p.get("against")),
                       perturbations=chosen, resamples=p.get("resamples", 1000))
    runs = SqlRunStore(store, actor=job.worker or "worker", job_id=job.id)

    def record(session: Session, _job: Job) -> dict[str, Any]:
        runs.add_audit(session, report)
        return {"audit": report.id, "passed": report.passed}

    return record
