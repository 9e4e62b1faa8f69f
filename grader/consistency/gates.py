"""Release gates: turn a criterion's agreement figures into a verdict a reviewer can read.

A verdict says "calibrated" or names every failing gate with its figure and threshold
("failed gate: QWK 0.41 < 0.70"). An undefined figure (constant scores, too few items) fails its
gate and says why: a criterion the set cannot measure is not calibrated.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field

from grader.consistency.stats import Agreement
from grader.rubric import Gates

CALIBRATED = "calibrated"
NO_CALIBRATION = "no calibration for this epoch"


class GateCheck(BaseModel):
    model_config = ConfigDict(frozen=True)

    gate: str  # e.g. "qwk_min"
    value: float | None
    threshold: float
    passed: bool
    text: str  # "QWK 0.41 < 0.70"


class GateVerdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    checks: tuple[GateCheck, ...] = ()

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def summary(self) -> str:
        if self.passed:
            return CALIBRATED
        failed = [c.text for c in self.checks if not c.passed] or ["no gate could be checked"]
        return "failed gate: " + "; ".join(failed)


def _check(gate: str, label: str, value: float | None, threshold: float, *, at_least: bool,
           absolute: bool = False, pct: bool = False, why_undefined: str = "undefined") -> GateCheck:
    def fmt(x: float, digits: int = 0) -> str:
        return f"{x:.{digits}%}" if pct else f"{x:.{digits + 2}f}"

    if value is None:
        return GateCheck(gate=gate, value=None, threshold=threshold, passed=False, text=f"{label} {why_undefined}")
    shown = abs(value) if absolute else value
    passed = shown >= threshold if at_least else shown <= threshold
    sign = (">=" if passed else "<") if at_least else ("<=" if passed else ">")
    name = f"|{label}|" if absolute else label
    digits = 0
    while digits < 3 and fmt(shown, digits) == fmt(threshold, digits) and shown != threshold:
        digits += 1  # never print "0.70 < 0.70": show the digit that decides
    return GateCheck(gate=gate, value=value, threshold=threshold, passed=passed,
                     text=f"{name} {fmt(shown, digits)} {sign} {fmt(threshold, digits)}")


def judge(agreement: Agreement, unscored_rate: float | None, gates: Gates) -> GateVerdict:
    """Every gate of `gates` against one rater's agreement with gold on one criterion (or overall)."""
    n = agreement.n
    if n < gates.min_items:
        return GateVerdict(checks=(GateCheck(gate="min_items", value=float(n), threshold=float(gates.min_items),
                                             passed=False, text=f"n {n} < {gates.min_items} scored gold items"),))
    constant = "undefined (gold or drafted scores constant)"
    return GateVerdict(checks=(
        _check("qwk_min", "QWK", agreement.qwk.value, gates.qwk_min, at_least=True, why_undefined=constant),
        _check("smd_max", "SMD", agreement.smd.value, gates.smd_max, at_least=False, absolute=True,
               why_undefined="undefined (gold scores constant)"),
        _check("exact_min", "exact", agreement.exact.value, gates.exact_min, at_least=True, pct=True),
        _check("adjacent_min", "adjacent", agreement.adjacent.value, gates.adjacent_min, at_least=True, pct=True),
        _check("unscored_max", "unscored", unscored_rate if unscored_rate is not None else 0.0, gates.unscored_max,
               at_least=False, pct=True),
    ))
