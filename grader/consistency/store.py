"""Where calibration runs and audit results persist, behind one small interface.

`RunStore` is what callers use (the CLI, the per-draft consistency check, the API); `JsonFileStore`
keeps one JSON file per run under the user's data directory (platformdirs, or `GRADER_DATA_DIR`).
A database-backed store implements the same methods and replaces it without touching callers.
Reports are pydantic models, so each store serialises them the same way.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from grader.errors import GraderError

if TYPE_CHECKING:
    from grader.consistency.audit_report import AuditReport
    from grader.consistency.report import CalibrationReport

_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


class StoreError(GraderError):
    """A run that does not exist, or a store that cannot be read or written."""


class RunSummary(BaseModel):
    """A line of `list_runs`/`list_audits`: enough to choose a run without loading it."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str  # "calibration" | "audit"
    created_at: str
    set_name: str
    rubric: str
    epoch: str
    drafter: str
    passed: bool


class RunStore(Protocol):
    def save_run(self, report: CalibrationReport) -> str: ...
    def get_run(self, run_id: str) -> CalibrationReport: ...
    def list_runs(self, *, epoch: str | None = None, rubric: str | None = None) -> list[RunSummary]: ...
    def latest_run(self, epoch: str, rubric: str) -> CalibrationReport | None: ...
    def save_audit(self, report: AuditReport) -> str: ...
    def get_audit(self, audit_id: str) -> AuditReport: ...
    def list_audits(self, *, epoch: str | None = None, rubric: str | None = None) -> list[RunSummary]: ...


def default_data_dir() -> Path:
    """The user's data directory (e.g. ~/.local/share/nki-grader); `Settings.data_dir` overrides it."""
    import platformdirs

    return Path(platformdirs.user_data_dir("nki-grader"))


def _summary(report: CalibrationReport | AuditReport) -> RunSummary:
    drafter = report.drafter.name + (f" ({report.drafter.model})" if report.drafter.model else "")
    return RunSummary(id=report.id, kind=report.kind, created_at=report.created_at, set_name=report.set.name,
                      rubric=report.rubric.id, epoch=report.epoch.hash, drafter=drafter, passed=report.passed)


class JsonFileStore:
    """`<root>/calibration-runs/<id>.json` and `<root>/audits/<id>.json`, written atomically."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_data_dir()

    # -- files -------------------------------------------------------------------------------
    def _dir(self, kind: str) -> Path:
        return self.root / ("calibration-runs" if kind == "calibration" else "audits")

    def _write(self, kind: str, report: BaseModel, run_id: str) -> str:
        if not _SAFE_ID.match(run_id):
            raise StoreError(f"unsafe run id {run_id!r}")
        folder = self._dir(kind)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(report.model_dump_json())
            os.replace(tmp, folder / f"{run_id}.json")
        except OSError as exc:
            raise StoreError(f"cannot write: {exc.strerror}", where=str(folder)) from exc
        return run_id

    def _read(self, kind: str, run_id: str, model: type[BaseModel]) -> BaseModel:
        path = self._dir(kind) / f"{run_id}.json"
        if not _SAFE_ID.match(run_id) or not path.is_file():
            raise StoreError(f"no {kind} run {run_id!r}", where=str(self._dir(kind)))
        try:
            return model.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError, ValueError) as exc:
            raise StoreError(f"unreadable {kind} record: {str(exc).splitlines()[0]}", where=str(path)) from exc

    def _all(self, kind: str, model: type[BaseModel]) -> list:
        folder = self._dir(kind)
        out = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                out.append(model.model_validate_json(path.read_text(encoding="utf-8")))
            except (OSError, ValidationError, ValueError):
                continue  # a damaged or older record never hides the others
        return out

    def _filtered(self, reports: list, epoch: str | None, rubric: str | None) -> list:
        keep = [r for r in reports if (epoch is None or r.epoch.hash == epoch) and (rubric is None or r.rubric.id == rubric)]
        return sorted(keep, key=lambda r: (r.created_at, r.id))

    # -- calibration runs --------------------------------------------------------------------
    def save_run(self, report: CalibrationReport) -> str:
        return self._write("calibration", report, report.id)

    def get_run(self, run_id: str) -> CalibrationReport:
        from grader.consistency.report import CalibrationReport

        return self._read("calibration", run_id, CalibrationReport)  # type: ignore[return-value]

    def list_runs(self, *, epoch: str | None = None, rubric: str | None = None) -> list[RunSummary]:
        from grader.consistency.report import CalibrationReport

        return [_summary(r) for r in self._filtered(self._all("calibration", CalibrationReport), epoch, rubric)]

    def latest_run(self, epoch: str, rubric: str) -> CalibrationReport | None:
        from grader.consistency.report import CalibrationReport

        runs = self._filtered(self._all("calibration", CalibrationReport), epoch, rubric)
        return runs[-1] if runs else None

    # -- audits ------------------------------------------------------------------------------
    def save_audit(self, report: AuditReport) -> str:
        return self._write("audit", report, report.id)

    def get_audit(self, audit_id: str) -> AuditReport:
        from grader.consistency.audit_report import AuditReport

        return self._read("audit", audit_id, AuditReport)  # type: ignore[return-value]

    def list_audits(self, *, epoch: str | None = None, rubric: str | None = None) -> list[RunSummary]:
        from grader.consistency.audit_report import AuditReport

        return [_summary(r) for r in self._filtered(self._all("audit", AuditReport), epoch, rubric)]


def load_report_file(path: str | Path) -> CalibrationReport | AuditReport:
    """A report written with `grader calibrate -o FILE` or `grader audit -o FILE` (told apart by `kind`)."""
    from grader.consistency.audit_report import AuditReport
    from grader.consistency.report import CalibrationReport

    try:
        text = Path(path).read_text(encoding="utf-8")
        kind = json.loads(text).get("kind")
        model = {"calibration": CalibrationReport, "audit": AuditReport}.get(kind)
        if model is None:
            raise ValueError(f"kind {kind!r} is neither 'calibration' nor 'audit'")
        return model.model_validate_json(text)
    except (OSError, ValidationError, ValueError, AttributeError) as exc:
        raise StoreError(f"not a calibration or audit report: {str(exc).splitlines()[0]}", where=str(path)) from exc
