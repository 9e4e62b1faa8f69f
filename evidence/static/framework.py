"""The rule framework (after Fixit): small Rule classes with docs and examples, run in one pass.

A rule is one class in one module under `evidence/static/rules/`: a docstring (its
documentation: what, why on Trainium, the fix), `id`, `version`, `severity`,
`dialects`, and `VALID` / `INVALID` source examples that become parametrised tests. Rules are
found by walking `Rule.__subclasses__()`. They implement any of the semantic hooks
(`on_call`, `on_assign`, `enter_loop`, `leave_loop`, `leave_function`) or raw libcst hooks
(`visit_If`, `leave_BooleanOperation`, ...). `evidence.static.engine` parses each file once,
wraps it in one `MetadataWrapper` and calls every rule's hooks from a single traversal.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import libcst as cst

from evidence.model import Severity
from evidence.static.dialect import BETA, STANDALONE

if TYPE_CHECKING:
    from evidence.static.engine import Engine
    from evidence.static.model import AssignInfo, CallInfo, FunctionInfo, LoopInfo

InputsSpec = dict[str, tuple[tuple[int, ...], str] | int | float | bool]


@dataclass(frozen=True)
class Valid:
    """Source a rule must accept. `inputs` maps argument names to (shape, dtype) or a value."""

    code: str
    inputs: InputsSpec | None = None
    options: dict[str, object] | None = None  # task facts (`task_options`), e.g. {"neuron_sdk": "2.29"}


@dataclass(frozen=True)
class Invalid:
    """Source a rule must flag; `line`, when given, is the line the first finding must be on."""

    code: str
    inputs: InputsSpec | None = None
    line: int | None = None
    options: dict[str, object] | None = None


@dataclass(frozen=True)
class Finding:
    rule: str
    severity: Severity
    start: int
    end: int
    message: str
    detail: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RuleFailure:
    """A rule that raised: its findings for this file are dropped, the other rules still report."""

    rule: str
    error_type: str
    message: str
    line: int | None


class Rule:
    """Base class. Subclasses set the class attributes and implement hooks; see module doc."""

    id: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    severity: ClassVar[Severity] = Severity.low
    dialects: ClassVar[tuple[str, ...]] = (BETA,)
    # True for rules about speed/efficiency: clean optimised kernels must trigger none of them.
    performance: ClassVar[bool] = True
    VALID: ClassVar[list[Valid | str]] = []
    INVALID: ClassVar[list[Invalid | str]] = []

    def __init__(self, engine: Engine) -> None:
        self.ctx = engine
        self.findings: list[Finding] = []
        self._lines: set[int] = set()

    @classmethod
    def doc(cls) -> str:
        return " ".join((cls.__doc__ or "").split())

    @classmethod
    def rationale(cls) -> str:
        """The 'why' paragraph of the docstring (its second paragraph), for finding details."""
        paras = [" ".join(p.split()) for p in (cls.__doc__ or "").split("\n\n") if p.strip()]
        return paras[1] if len(paras) > 1 else (paras[0] if paras else "")

    def report(
        self,
        where: cst.CSTNode | tuple[int, int],
        message: str,
        *,
        detail: str = "",
        metrics: dict[str, float | int | None] | None = None,
        labels: dict[str, str] | None = None,
        severity: Severity | None = None,
    ) -> None:
        start, end = where if isinstance(where, tuple) else self.ctx.lines(where)
        if start in self._lines:  # one finding per rule per line
            return
        if self.ctx.ruled_out(start):  # code the task's values never trace (`if dropout_p > 0.0:` at 0.0)
            return
        self._lines.add(start)
        clean = {k: float(v) for k, v in (metrics or {}).items() if v is not None}
        self.findings.append(Finding(
            self.id, severity or self.severity, start, end, message,
            (detail + " " if detail else "") + self.rationale(), clean, dict(labels or {}),
        ))

    # Semantic hooks, called by the engine. Override the ones a rule needs.
    def on_call(self, call: CallInfo) -> None: ...
    def on_assign(self, assign: AssignInfo) -> None: ...
    def enter_loop(self, loop: LoopInfo) -> None: ...
    def leave_loop(self, loop: LoopInfo) -> None: ...
    def leave_function(self, function: FunctionInfo) -> None: ...


SEMANTIC_HOOKS = ("on_call", "on_assign", "enter_loop", "leave_loop", "leave_function")


def load_rules() -> tuple[type[Rule], ...]:
    """Every concrete rule, sorted by id (imports all modules of `evidence.static.rules`)."""
    from evidence.static import rules as pkg

    for info in pkgutil.iter_modules(pkg.__path__, prefix=pkg.__name__ + "."):
        importlib.import_module(info.name)
    found: dict[str, type[Rule]] = {}
    stack = list(Rule.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.id and cls.__module__.startswith(pkg.__name__ + "."):  # rules live in the package
            found[cls.id] = cls
    return tuple(found[k] for k in sorted(found))


def rules_for(dialect: str, rules: tuple[type[Rule], ...] | list[type[Rule]] | None = None) -> list[type[Rule]]:
    return [r for r in (rules if rules is not None else load_rules()) if dialect in r.dialects]


__all__ = [
    "BETA", "STANDALONE", "Finding", "Invalid", "Rule", "RuleFailure", "Valid", "load_rules", "rules_for",
]
