"""Python conditions decided at trace time: `if dropout_p > 0.0:`, `a if mixed else b`.

A kernel's Python values (parameter defaults the task does not override, constants, what every
caller of a helper passes, the task's shapes) are fixed while NKI traces it, so a condition over
them picks one branch. `decide` gives True/False when the known values settle the condition and
None otherwise: an unknown value (a tile, a name the walk cannot resolve) never picks a branch.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import libcst as cst

from evidence.static.shapes import Dtype

_ORDER = {
    cst.LessThan: operator.lt, cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge,
}
_EQUALITY = {cst.Equal: operator.eq, cst.NotEqual: operator.ne}


def decide(test: cst.BaseExpression, value: Callable[[cst.CSTNode], object]) -> bool | None:
    """The truth of `test` when `value` (the walk's evaluator) knows what it reads, else None."""
    if isinstance(test, cst.Comparison):
        return _comparison(test, value)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = decide(test.expression, value)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = decide(test.left, value), decide(test.right, value)
        if isinstance(test.operator, cst.And):
            return False if False in (left, right) else (True if left and right else None)
        return True if True in (left, right) else (False if left is False and right is False else None)
    flag = value(test)  # a flag, or a number's truth (`if dropout_p:`)
    return bool(flag) if isinstance(flag, (bool, int, float)) else None


def _comparison(test: cst.Comparison, value: Callable[[cst.CSTNode], object]) -> bool | None:
    """A (possibly chained, `0 < p <= 1`) comparison of numbers, or equality of numbers, flags and
    dtypes. None is not compared: the evaluator's None means 'unknown', not Python's None."""
    left = value(test.left)
    for target in test.comparisons:
        right = value(target.comparator)
        op = type(target.operator)
        if op in _ORDER and _number(left) and _number(right):
            holds = _ORDER[op](left, right)
        elif op in _EQUALITY and _comparable(left, right):
            holds = _EQUALITY[op](left, right)
        else:
            return None
        if not holds:
            return False
        left = right
    return True


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _comparable(a: object, b: object) -> bool:
    """Known plain values whose == is Python's: numbers and flags with each other, dtypes with dtypes."""
    scalar = (int, float)  # bool is an int: `flag == True`, `n == 0`
    return (isinstance(a, scalar) and isinstance(b, scalar)) or (isinstance(a, Dtype) and isinstance(b, Dtype))


def rebound_names(loop: cst.CSTNode) -> frozenset[str]:
    """Names a loop's body assigns: their value can differ from one iteration to the next."""
    names: set[str] = set()

    class _Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            names.update(_target_names(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            names.update(_target_names(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            names.update(_target_names(node.target))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            names.update(_target_names(node.target))

        def visit_For(self, node: cst.For) -> None:
            names.update(_target_names(node.target))

    loop.visit(_Targets())
    return frozenset(names)


def read_names(test: cst.BaseExpression) -> frozenset[str]:
    """The plain names a condition reads (`dropout_p` of `dropout_p > 0.0`)."""
    names: set[str] = set()

    class _Reads(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            names.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)  # `cfg.flag` reads `cfg`, not a name `flag`
            return False

    test.visit(_Reads())
    return frozenset(names)


def _target_names(node: cst.BaseExpression) -> list[str]:
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, (cst.Tuple, cst.List)):
        return [n for el in node.elements for n in _target_names(el.value)]
    if isinstance(node, cst.StarredElement):
        return _target_names(node.value)
    return []
