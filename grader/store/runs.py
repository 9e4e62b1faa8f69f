"""Calibration runs and audits in the database: the SQL implementation of the consistency package's
`RunStore` interface (grader.consistency.store), so calibration, per-draft checks and the API share
one store. Each saved run is also written to the audit log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.consistency.store import RunSummary, StoreError
from grader.store import audit_log
from grader.store.db import Store
from grader.store.models import AuditRun, CalibrationItemResult, CalibrationRun

if TYPE_CHECKING:
    from grader.consistency.audit_report import AuditReport
    from grader.consistency.report import CalibrationReport


def _summary(row: CalibrationRun | AuditRun, kind: str) -> RunSummary:
    return RunSummary(id=row.id, kind=kind, created_at=row.created_at, set_name=row.set_name, rubric=row.rubric,
                      epoch=row.epoch, drafter=row.drafter, passed=row.passed)


def _columns(report: Any, job_id: str | None) -> dict[str, Any]:
    drafter = report.drafter.name + (f" ({report.drafter.model})" if report.drafter.model else "")
    return {"id": report.id, "job_id": job_id, "set_name": report.set.name, "rubric": report.rubric.id,
            "epoch": report.epoch.hash, "drafter": drafter, "passed": report.passed, "created_at": report.created_at,
            "report_json": report.model_dump_json()}


class SqlRunStore:
    """`RunStore` over the service database. `job_id` links a run to the job that produced it."""

    def __init__(self, store: Store, *, actor: str = "system", job_id: str | None = None) -> None:
        self.store, self.actor, self.job_id = store, actor, job_id

    # -- calibration runs --------------------------------------------------------------------
    def save_run(self, report: CalibrationReport) -> str:
        with self.store.write() as session:
            return self.add_run(session, report)

    def add_run(self, session: Session, report: CalibrationReport) -> str:
        """Save inside the caller's transaction (a job stores its run and finishes in one commit)."""
        session.add(CalibrationRun(**_columns(report, self.job_id)))
        session.flush()
        for o in report.outcomes:
            session.add(CalibrationItemResult(run_id=report.id, item_id=o.item, criterion_id=o.criterion_id,
                                              gold=None if o.gold is None else str(o.gold), status=o.status,
                                              score=o.score))
        audit_log.append(session, actor=self.actor, action="calibration.saved", subject=f"calibration:{report.id}",
                         data={"set": report.set.name, "epoch": report.epoch.hash, "passed": report.passed,
                               "job": self.job_id})
        return report.id

    def _get(self, model: type[CalibrationRun] | type[AuditRun], run_id: str, kind: str) -> str:
        with self.store.read() as session:
            row = session.get(model, run_id)
        if row is None:
            raise StoreError(f"no {kind} run {run_id!r}")
        return row.report_json

    def get_run(self, run_id: str) -> CalibrationReport:
        from grader.consistency.report import CalibrationReport

        return CalibrationReport.model_validate_json(self._get(CalibrationRun, run_id, "calibration"))

    def _list(self, model: type[CalibrationRun] | type[AuditRun], epoch: str | None, rubric: str | None) -> list:
        query = select(model)
        if epoch is not None:
            query = query.where(model.epoch == epoch)
        if rubric is not None:
            query = query.where(model.rubric == rubric)
        with self.store.read() as session:
            return list(session.scalars(query.order_by(model.created_at, model.id)))

    def list_runs(self, *, epoch: str | None = None, rubric: str | None = None) -> list[RunSummary]:
        return [_summary(r, "calibration") for r in self._list(CalibrationRun, epoch, rubric)]

    def latest_run(self, epoch: str, rubric: str) -> CalibrationReport | None:
        from grader.consistency.report import CalibrationReport

        rows = self._list(CalibrationRun, epoch, rubric)
        return CalibrationReport.model_validate_json(rows[-1].report_json) if rows else None

    def run_for_job(self, job_id: str) -> CalibrationReport | None:
        from grader.consistency.report import CalibrationReport

        with self.store.read() as session:
            row = session.scalars(select(CalibrationRun).where(CalibrationRun.job_id == job_id)).first()
        return None if row is None else CalibrationReport.model_validate_json(row.report_json)

    # -- audits ------------------------------------------------------------------------------
    def save_audit(self, report: AuditReport) -> str:
        with self.store.write() as session:
            return self.add_audit(session, report)

    def add_audit(self, session: Session, report: AuditReport) -> str:
        """Save inside the caller's transaction (an audit job stores its report and finishes in one commit)."""
        session.add(AuditRun(**_columns(report, self.job_id)))
        audit_log.append(session, actor=self.actor, action="audit.saved", subject=f"audit:{report.id}",
                         data={"set": report.set.name, "epoch": report.epoch.hash, "passed": report.passed,
                               "job": self.job_id})
        return report.id

    def get_audit(self, audit_id: str) -> AuditReport:
        from grader.consistency.audit_report import AuditReport

        return AuditReport.model_validate_json(self._get(AuditRun, audit_id, "audit"))

    def list_audits(self, *, epoch: str | None = None, rubric: str | None = None) -> list[RunSummary]:
        return [_summary(r, "audit") for r in self._list(AuditRun, epoch, rubric)]

    # -- either -------------------------------------------------------------------------------
    def find(self, ref: str) -> CalibrationReport | AuditReport | None:
        """A stored audit or calibration run by its report id or by the id of the job that produced it."""
        from grader.consistency.audit_report import AuditReport
        from grader.consistency.report import CalibrationReport

        with self.store.read() as session:
            for model, report in ((AuditRun, AuditReport), (CalibrationRun, CalibrationReport)):
                row = session.scalars(select(model).where((model.id == ref) | (model.job_id == ref)).limit(1)).first()
                if row is not None:
                    return report.model_validate_json(row.report_json)
        return None
