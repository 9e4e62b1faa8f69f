"""Bindings across `if`/`elif`/`else`: which branch's names hold after the statement.

The engine walks a function top to bottom, so without this a name rebound inside a branch would
keep its branch value afterwards whether or not the branch runs. Kernels clamp tile sizes that way
(`if M < TILE_M: TILE_M = M`): taking the clamp unconditionally made a 128-row tile look like a
1024-row one. Here a condition the task's shapes decide selects its branch's bindings; an
undecided one keeps a name only where every path agrees on its value, and makes it unknown
otherwise (a rule then does not guess). A flag the walk knows (`if use_dma:` with a parameter
whose default False no caller overrides) decides its `if` too, so rules can tell code that never
runs for the task (`disabled`) and code guarded by an off-by-default flag (`default_off_guard`).
Conditions are decided by `conditions.decide` (comparisons, `not`, `and`/`or` of known values); one
that reads a name a loop around it rebinds (`if first:` ... `first = False`) is left undecided, as
the walk sees only the value before the first iteration.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from evidence.static.conditions import decide, read_names, rebound_names
from evidence.static.shapes import Binding

# (loop id, loop node) of the loops around the walk; a `while` has no id
EnclosingLoops = Callable[[], list[tuple[int | None, cst.CSTNode]]]


@dataclass
class _Frame:
    node: cst.If
    taken: bool | None  # the condition's value when the task's shapes decide it
    before: dict[str, Binding]  # the scope when the `if` started
    after_body: dict[str, Binding] | None = None  # the scope at the end of the body (set when an else starts)


class BranchScopes:
    """Called by the engine around each `if`; `scope()` is the innermost binding dict it edits."""

    def __init__(self, value, scope, lookup: Callable[[str], Binding | None] | None = None,
                 loops: EnclosingLoops | None = None) -> None:
        self._value, self._scope = value, scope
        self._lookup, self._loops = lookup, loops
        self._rebound: dict[int, frozenset[str]] = {}  # per loop node: the names its body assigns
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
        return decide(test, self._value) if self._loop_invariant(test) else None

    def _loop_invariant(self, test: cst.BaseExpression) -> bool:
        """No name the test reads is carried into an enclosing loop and rebound in its body."""
        if self._loops is None or self._lookup is None:
            return True
        reads = read_names(test)
        for loop_id, node in self._loops():
            if id(node) not in self._rebound:
                self._rebound[id(node)] = rebound_names(node)
            for name in reads & self._rebound[id(node)]:
                b = self._lookup(name)
                if b is None or loop_id is None or loop_id not in b.def_loops:  # bound before this iteration
                    return False
        return True


def _needed_true(test: cst.BaseExpression, body: bool) -> list[cst.Name]:
    """Names that must be true to reach the body (`f` of `f and x`) or the else (`f` of
    `x or not f`) of an `if` on `test`."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And if body else cst.Or):
        return _needed_true(test.left, body) + _needed_true(test.right, body)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _needed_true(test.expression, not body)
    return [test] if body and isinstance(test, cst.Name) else []


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
