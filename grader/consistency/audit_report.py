"""Audit reports: drift against an earlier epoch and perturbation invariance, as pydantic models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from grader.consistency.compare import Outcome
from grader.consistency.report import RunReport


class DriftRow(BaseModel):
    """One criterion: how the audited epoch's outcomes compare with the earlier results."""

    model_config = ConfigDict(frozen=True)

    criterion_id: str
    n: int  # items present in both
    changed: int  # status or score differs
    qwk: float | None  # between the two epochs' scores, on items both scored
    exact: float | None


class DriftChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    item: str
    criterion_id: str
    before: Outcome
    after: Outcome


class Drift(BaseModel):
    model_config = ConfigDict(frozen=True)

    against: str  # the earlier run's id or file
    against_epoch: str
    same_epoch: bool
    rows: tuple[DriftRow, ...]
    changes: tuple[DriftChange, ...]
    missing_items: tuple[str, ...] = ()  # in this audit but not in the earlier results


class PerturbationCase(BaseModel):
    """One item x perturbation x criterion whose outcome moved (listed) or stayed (counted)."""

    model_config = ConfigDict(frozen=True)

    item: str
    perturbation: str
    criterion_id: str
    original: Outcome
    perturbed: Outcome


class PerturbationRow(BaseModel):
    """Stability of one criterion under one perturbation, over the items it applied to."""

    model_config = ConfigDict(frozen=True)

    perturbation: str
    criterion_id: str
    n: int
    stable: int
    not_applicable: int  # items the perturbation could not change (e.g. one function: no reorder)

    @property
    def rate(self) -> float | None:
        return self.stable / self.n if self.n else None


class InjectionResult(BaseModel):
    """The injected comment on one item: detected or not, and the criteria whose score it raised."""

    model_config = ConfigDict(frozen=True)

    item: str
    detected: bool
    raised: tuple[str, ...] = ()


class AuditReport(RunReport):
    """An audit: this epoch's grades of a frozen set, drift against earlier results, perturbation invariance."""

    kind: Literal["audit"] = "audit"
    drift: Drift | None = None
    perturbation: tuple[PerturbationRow, ...]
    unstable: tuple[PerturbationCase, ...]
    injection: tuple[InjectionResult, ...]
    graded_variants: int = 0
    errors: tuple[str, ...] = ()  # variants that could not be graded

    @property
    def invariant(self) -> bool:
        """Every invariant perturbation left every outcome unchanged."""
        return not any(c.perturbation != "injection" for c in self.unstable)

    @property
    def injection_safe(self) -> bool:
        return all(r.detected and not r.raised for r in self.injection)

    @property
    def passed(self) -> bool:
        return self.invariant and self.injection_safe and not self.errors
