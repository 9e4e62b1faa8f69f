"""Configuration records: instances of the submission's own `@dataclass` classes as Python values.

Library kernels pass their options in a config object (`cfg = AttnConfig(bs=B, tp_k_prior=False)`)
and branch on its fields inside helpers (`elif not cfg.tp_k_prior:`). A field is a Python value
while NKI traces the kernel, like a flag parameter, so the walk can decide such branches and rules
stay silent in code the task's configuration never runs. An instance is a `Record` of the values
the generated constructor's call passes (by keyword, or by position in field order) and the fields'
literal defaults (a class with its own `__init__`, or with bases other than `NKIObject`, is not one). A field some code of the submission assigns (`cfg.x = ...`, `setattr(cfg, "x", ...)`,
`self.x = ...` in `__post_init__`) may change after construction: it is always unknown.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

_UNKNOWN = object()


@dataclass(frozen=True)
class Record:
    """An instance of a dataclass of the submission: its class and the fields' known values."""

    cls: str
    fields: tuple[tuple[str, object], ...]

    def get(self, name: str) -> object:
        return next((v for k, v in self.fields if k == name), None)


@dataclass(frozen=True)
class RecordClass:
    """A dataclass of the submission: its fields in order, with their literal defaults (or unknown)."""

    name: str
    fields: tuple[tuple[str, object], ...]  # (field, default value, _UNKNOWN when none or not a literal)
    mutated: frozenset[str]

    def make(self, pos: list[object], kw: dict[str, object]) -> Record | None:
        names = [f for f, _ in self.fields]
        if len(pos) > len(names) or any(k not in names for k in kw):
            return None  # not a plain constructor call
        values = dict(self.fields) | dict(zip(names, pos)) | kw
        return Record(self.name, tuple((f, None if f in self.mutated or values[f] is _UNKNOWN else values[f])
                                       for f in names))


def _is_dataclass(node: ast.ClassDef) -> bool:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if name == "dataclass":
            return True
    return False


def _plain_base(node: ast.expr) -> bool:
    """`object` or NKI's `NKIObject` (a marker base of traced config classes): no fields of its own."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name in ("object", "NKIObject")


def _literal(node: ast.expr | None) -> object:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float)) and node.value is not None:
        return node.value
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    return _UNKNOWN


def mutated_fields(trees: Iterable[ast.Module]) -> frozenset[str]:
    """Attribute names some code assigns (`x.f = ...`, `x.f += ...`, `setattr(x, "f", ...)`)."""
    found: set[str] = set()
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)):
                found.add(n.attr)
            elif (isinstance(n, ast.Call) and len(n.args) >= 2 and isinstance(n.args[1], ast.Constant)
                  and isinstance(n.args[1].value, str)
                  and ((isinstance(n.func, ast.Name) and n.func.id == "setattr")
                       or (isinstance(n.func, ast.Attribute) and n.func.attr == "__setattr__"))):
                found.add(n.args[1].value)
    return frozenset(found)


def record_classes(tree: ast.Module, mutated: frozenset[str]) -> dict[str, RecordClass]:
    """The module's top-level dataclasses by name."""
    out: dict[str, RecordClass] = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.ClassDef) or not _is_dataclass(stmt) or not all(_plain_base(b) for b in stmt.bases):
            continue  # inherited fields are not followed
        if any(isinstance(item, ast.FunctionDef) and item.name == "__init__" for item in stmt.body):
            continue  # its own constructor: the call's arguments are not the fields
        fields = []
        for item in stmt.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                if "ClassVar" in ast.dump(item.annotation) or "InitVar" in ast.dump(item.annotation):
                    continue
                fields.append((item.target.id, _literal(item.value) if item.value is not None else _UNKNOWN))
        out[stmt.name] = RecordClass(stmt.name, tuple(fields), mutated)
    return out


__all__ = ["Record", "RecordClass", "mutated_fields", "record_classes"]
