"""Bindings across `if`/`elif`/`else`: which branch's names hold after the statement.

The engine walks a function top to bottom, so without this a name rebound inside a branch would
keep its branch value afterwards whether or not the branch runs. Kernels clamp tile sizes that way
(`if M < TILE_M: TILE_M = M`): taking the clamp unconditionally made a 128-row tile look like a
1024-row one. Here a condition the task's shapes decide selects its branch's bindings; an
undecided one keeps a name only where every path agrees on its value, and makes it unknown
otherwise (a rule then does not guess). A flag the walk knows (`if use_dma:` with a parameter
whose default False no caller overrides) decides its `if` too, so rules can tell code that never
runs for the task (`disabled`) and code guarded by an off-by-default flag (`default_off_guard`).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import libcst as cst

from evidence.static.shapes import Binding

_COMPARE = {
    cst.LessThan: operator.lt, cst.LessThanEqual: operator.le, cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge, cst.Equal: operator.eq, cst.NotEqual: operator.ne,
}


@dataclass
class _Frame:
    node: cst.If
    taken: bool | None  # the condition's value when the task's shapes decide it
    before: dict[str, Binding]  # the scope when the `if` started
    after_body: dict[str, Binding] | None = None  # the scope at the end of the body (set when an else starts)


class BranchScopes:
    """Called by the engine around each `if`; `scope()` is the innermost binding dict it edits."""

    def __init__(self, value, scope) -> None:
        self._value, self._scope = value, scope
        self._frames: list[_Frame] = []

    def enter_if(self, node: cst.If) -> None:
        self._start_else(node)  # an `elif` is the previous if's else branch
        self._frames.append(_Frame(node, self._decide(node.test), dict(self._scope())))

    def enter_else(self, node: cst.Else) -> None:
        self._start_else(node)

    def leave_if(self, node: cst.If) -> None:
        frame = self._frames.pop()
        scope = self._scope()
        if frame.after_body is None:  # no else: the other path is the scope before the if
            body, other = dict(scope), frame.before
        else:
            body, other = frame.after_body, dict(scope)
        chosen = body if frame.taken else other if frame.taken is False else _join(body, other)
        scope.clear()
        scope.update(chosen)

    def disabled(self) -> bool:
        """Whether the walk is inside a branch the known values rule out (an `if False` body, the
        `else` of an `if True`)."""
        return any(f.taken is not None and f.taken == (f.after_body is not None) for f in self._frames)

    def default_off_guard(self, fn: cst.FunctionDef) -> tuple[str, str] | None:
        """(name, default) of a parameter of `fn` defaulting to False/None that an enclosing `if`
        body needs true (`if use_dma and ...:`) while its value here is unknown."""
        defaults = {p.name.value: p.default for p in (*fn.params.params, *fn.params.kwonly_params)
                    if isinstance(p.default, cst.Name) and p.default.value in ("False", "None")}
        for f in self._frames:
            for name in _needed_true(f.node.test, f.after_body is None):
                if name.value in defaults and self._value(name) is not True:
                    return name.value, defaults[name.value].value
        return None

    def _start_else(self, node: cst.CSTNode) -> None:
        if self._frames and self._frames[-1].node.orelse is node:
            frame = self._frames[-1]
            scope = self._scope()
            frame.after_body = dict(scope)
            scope.clear()
            scope.update(frame.before)

    def _decide(self, test: cst.BaseExpression) -> bool | None:
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            compare = _COMPARE.get(type(test.comparisons[0].operator))
            left, right = self._value(test.left), self._value(test.comparisons[0].comparator)
            if compare is not None and _number(left) and _number(right):
                return bool(compare(left, right))
            return None
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self._decide(test.expression)
            return None if inner is None else not inner
        if isinstance(test, cst.BooleanOperation):
            left, right = self._decide(test.left), self._decide(test.right)
            if isinstance(test.operator, cst.And):
                return False if False in (left, right) else (True if left and right else None)
            return True if True in (left, right) else (False if left is False and right is False else None)
        flag = self._value(test)
        return flag if isinstance(flag, bool) else None


def _needed_true(test: cst.BaseExpression, body: bool) -> list[cst.Name]:
    """Names that must be true to reach the body (`f` of `f and x`) or the else (`f` of
    `x or not f`) of an `if` on `test`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And if body else cst.Or):
        return _needed_true(test.left, body) + _needed_true(test.right, body)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _needed_true(test.expression, not body)
    return [test] if body and isinstance(test, cst.Name) else []


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _join(a: dict[str, Binding], b: dict[str, Binding]) -> dict[str, Binding]:
    """Names both paths bind to the same value keep it; any other name a branch touched is unknown."""
    out = {}
    for name in a.keys() | b.keys():
        x, y = a.get(name), b.get(name)
        if x is y or (x is not None and y is not None and _same(x.value, y.value)):
            out[name] = x
        else:
            known = [v for v in (x, y) if v is not None]
            out[name] = Binding(None, frozenset().union(*(v.deps for v in known)),
                                frozenset().union(*(v.names for v in known)),
                                known[0].def_loops if known else (), None)
    return out


def _same(x: object, y: object) -> bool:
    try:
        return type(x) is type(y) and bool(x == y)
    except Exception:  # values whose == is not a plain bool
        return False
