"""Calls through objects of the submission's own classes: which method a call reaches.

Library kernels keep state in objects of classes from their helper modules (an SBUF allocator whose
`alloc_stack` issues the `nl.ndarray`, a tiler calling `self.load(...)`), so part of the NKI work sits
in methods reached as `mgr.alloc_stack(...)`. A name's class is known statically when the name is
bound by a constructor call (`mgr = SbufManager(...)`, every binding of it in the function agreeing),
annotated (`mgr: SbufManager`, `Optional[SbufManager]`, `"SbufManager"`), or is a method's first
parameter (`self`, `cls`); `C.method(...)` names its class itself. The method is looked up in the
class, then depth first in its bases (classes of the submission only). Anything else (an attribute
holding an object, a container of objects, a class outside the submission) stays unresolved.

`ClassTable` answers this for the reach pass (CPython `ast`: which methods the entry reaches);
`ObjectModel` for the engine's walk of one file (libcst: the method a call site reaches and its
signature, so the call's arguments are recorded like those of a helper function). An object is an
`Instance` value while the file is walked: its class only, nothing of its state.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from evidence.static.helper_types import Typer

# (module path, name): a class, or a function/method (`Cls.meth` for a method)
Target = tuple[str, str]


@dataclass(frozen=True)
class Instance:
    """An object of a submission class, as the static walk knows it: its class only."""

    cls: Target


def method_kind(decorators: list[str]) -> str:
    """'static', 'class' or 'instance' from a method's decorator names."""
    if "staticmethod" in decorators:
        return "static"
    return "class" if "classmethod" in decorators else "instance"


@dataclass
class ClassInfo:
    key: Target
    bases: tuple[ast.expr, ...]
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]


class ClassTable:
    """The top-level classes of the submission's files and the names each file knows them by.

    `local(path)` maps a name to a class: the file's own classes and names it imports that resolve to
    one (`resolve_name(path, name)` -> (module, name) the import finally names, or None)."""

    def __init__(self, trees: dict[str, ast.Module], resolve_name: Callable[[str, str], Target | None],
                 modules: Callable[[str], dict[str, str]] | None = None) -> None:
        self.classes: dict[Target, ClassInfo] = {}
        for path, tree in trees.items():
            for stmt in tree.body:
                if isinstance(stmt, ast.ClassDef):
                    methods = {s.name: s for s in stmt.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
                    self.classes[(path, stmt.name)] = ClassInfo((path, stmt.name), tuple(stmt.bases), methods)
        self._trees = trees
        self._resolve_name = resolve_name
        self._local: dict[str, dict[str, Target]] = {}
        self._mro: dict[Target, list[Target]] = {}
        self.typer = Typer(trees, self, modules or (lambda path: {}))

    def local(self, path: str) -> dict[str, Target]:
        if path not in self._local:
            names: dict[str, Target] = {}
            for stmt in ast.walk(self._trees[path]):
                if isinstance(stmt, ast.ImportFrom):
                    for alias in stmt.names:
                        target = self._resolve_name(path, alias.asname or alias.name)
                        if target in self.classes:
                            names[alias.asname or alias.name] = target
            names.update({name: key for key in self.classes for name in [key[1]] if key[0] == path})
            self._local[path] = names
        return self._local[path]

    def class_of(self, path: str, node: ast.expr | None) -> Target | None:
        """The class an expression (an annotation, a constructor's callee) names in file `path`."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):  # "SbufManager"
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(node, ast.Subscript):  # Optional[C]
            inner = node.slice
            name = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
            return self.class_of(path, inner) if name == "Optional" else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # C | None
            sides = [s for s in (node.left, node.right) if not (isinstance(s, ast.Constant) and s.value is None)]
            return self.class_of(path, sides[0]) if len(sides) == 1 else None
        if isinstance(node, ast.Name):
            return self.local(path).get(node.id)
        return None

    def lookup(self, cls: Target, method: str) -> Target | None:
        """(module, `Cls.method`) of the definition `method` finds first in `cls`'s method resolution order."""
        for key in self.mro(cls):
            if method in self.classes[key].methods:
                return key[0], f"{key[1]}.{method}"
        return None

    def mro(self, cls: Target) -> list[Target]:
        """`cls` and its bases among the submission's classes in Python's method resolution order (C3), so a
        diamond's shared base comes after every class that derives from it; bases outside the submission hold
        no methods here and are left out. Inheritance no interpreter accepts (a cycle, an inconsistent order)
        falls back to depth first."""
        if cls not in self.classes:
            return []
        if cls not in self._mro:
            self._mro[cls] = []  # asked again while being worked out: a cycle, which has no order
            self._mro[cls] = _c3(cls, [self.mro(b) for b in self.bases(cls)], self.bases(cls)) or self._depth_first(cls)
        return self._mro[cls]

    def bases(self, cls: Target) -> list[Target]:
        info = self.classes.get(cls)
        found = [self.class_of(cls[0], base) for base in info.bases] if info else []
        return [b for b in found if b is not None and b in self.classes]

    def _depth_first(self, cls: Target) -> list[Target]:
        out: list[Target] = []
        todo = [cls]
        while todo:
            key = todo.pop(0)
            if key not in out and key in self.classes:
                out.append(key)
                todo[:0] = self.bases(key)
        return out

    def method_node(self, target: Target) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        cls, _, name = target[1].partition(".")
        info = self.classes.get((target[0], cls))
        return info.methods.get(name) if info else None

    def resolve(self, path: str, name: str) -> Target | None:
        """(module, name) a name of file `path` finally names (its own top-level name, or an import's)."""
        return self._resolve_name(path, name)

    def targets(self, path: str, fn: ast.AST, owner: Target | None,
                receiver: Target | None = None) -> set[tuple[Target, Target | None]]:
        """The methods a function (or a method of `owner`, called on an object of class `receiver`, its own
        by default) calls through objects whose class is known (`helper_types`: names, results of calls,
        attributes and items of containers), each with the class of the object it is called on: what
        `self.step()` in a base class's method reaches depends on it (a subclass's override)."""
        s = self.typer.scope(path, fn, owner, receiver)
        found: set[tuple[Target, Target | None]] = set()
        for n in ast.walk(fn):
            if not isinstance(n, ast.Call):
                continue
            if (c := self.class_of(path, n.func)) is not None and not (
                    isinstance(n.func, ast.Name) and n.func.id in s.bindings):  # a constructor runs __init__
                for special in ("__init__", "__post_init__"):
                    if (t := self.lookup(c, special)) is not None:
                        found.add((t, c))
            elif isinstance(n.func, ast.Attribute):
                t = self._target(n, s)
                if t is not None and "." in t[0][1]:
                    found.add(t)
        return found

    def _target(self, call: ast.Call, s) -> tuple[Target, Target | None] | None:
        """`Typer.call_target`, undecided where submitted code nests deeper than the interpreter's stack."""
        try:
            return self.typer.call_target(call, s)
        except RecursionError:
            return None

    def call_sites(self, path: str) -> dict[tuple[int, str], Target]:
        """{(line, method name): `Cls.meth`} of the calls through objects in file `path` whose method is
        decidable, for the engine (which knows a call by its line); a line calling two methods of one
        name is left out."""
        out: dict[tuple[int, str], Target | None] = {}
        tree = self._trees[path]
        units = [(s, None) for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        units += [(m, (path, c.name)) for c in tree.body if isinstance(c, ast.ClassDef)
                  for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for fn, owner in units:
            s = self.typer.scope(path, fn, owner)
            for n in ast.walk(fn):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
                    t = self._target(n, s)
                    if t is not None and "." in t[0][1]:
                        key = (n.lineno, n.func.attr)
                        out[key] = t[0] if out.get(key, t[0]) == t[0] else None
        return {k: v for k, v in out.items() if v is not None}


def _c3(cls: Target, linearisations: list[list[Target]], bases: list[Target]) -> list[Target] | None:
    """C3 merge: `cls` followed by its bases' linearisations merged in order, or None when no order exists."""
    seqs = [list(x) for x in (*linearisations, bases) if x]
    if any(cls in x for x in seqs):  # a class among its own bases: a cycle
        return None
    out = [cls]
    while seqs:
        head = next((x[0] for x in seqs if not any(x[0] in y[1:] for y in seqs)), None)
        if head is None:
            return None
        out.append(head)
        seqs = [y for y in ([z for z in x if z != head] for x in seqs) if y]
    return out


@dataclass(frozen=True)
class MethodRef:
    """A method a call reaches: where it is defined, its parameters (after the receiver's) and defaults."""

    module: str
    qualname: str  # `Cls.meth`
    receiver: str | None  # the parameter the object is bound to (`self`), None for a static method
    kind: str  # method_kind
    params: tuple[str, ...]
    defaults: dict[str, cst.BaseExpression]


class ObjectModel:
    """What the engine needs to follow calls through objects while it walks `file`: the classes by the
    names this file uses, and the method a call reaches with its signature."""

    def __init__(self, file: str, table: ClassTable, signatures: dict[Target, MethodRef]) -> None:
        self.file = file
        self.classes = table.local(file)
        self._table = table
        self._signatures = signatures
        self._sites: dict[tuple[int, str], Target] | None = None

    def method(self, cls: Target, name: str) -> MethodRef | None:
        target = self._table.lookup(cls, name)
        return self._signatures.get(target) if target is not None else None

    def method_at(self, line: int, name: str) -> MethodRef | None:
        """The method a call `<receiver>.name(...)` on `line` reaches when the receiver's class is decidable
        from the submission's code alone (`helper_types`), where the walk's values do not say."""
        if self._sites is None:
            self._sites = self._table.call_sites(self.file) if self.file in self._table._trees else {}
        target = self._sites.get((line, name))
        return self._signatures.get(target) if target is not None else None


def annotation_class(node: cst.BaseExpression, classes: dict[str, Target]) -> Target | None:
    """The class an annotation names (`C`, `Optional[C]`, `C | None`, `"C"`), from the file's `classes`."""
    if isinstance(node, cst.SimpleString):
        text = node.evaluated_value
        return classes.get(text) if isinstance(text, str) and text.isidentifier() else None
    if isinstance(node, cst.Subscript) and isinstance(node.value, (cst.Name, cst.Attribute)) and len(node.slice) == 1:
        outer = node.value.value if isinstance(node.value, cst.Name) else node.value.attr.value
        inner = node.slice[0].slice
        return annotation_class(inner.value, classes) if outer == "Optional" and isinstance(inner, cst.Index) else None
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        sides = [s for s in (node.left, node.right) if not (isinstance(s, cst.Name) and s.value == "None")]
        return annotation_class(sides[0], classes) if len(sides) == 1 else None
    return classes.get(node.value) if isinstance(node, cst.Name) else None


def method_signatures(path: str, module: cst.Module) -> dict[Target, MethodRef]:
    """{(path, `Cls.meth`): signature} of the methods of the module's top-level classes."""
    out: dict[Target, MethodRef] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.ClassDef):
            continue
        for item in stmt.body.body:
            if not isinstance(item, cst.FunctionDef):
                continue
            decorators = [(d.decorator.value if isinstance(d.decorator, cst.Name) else
                           d.decorator.attr.value if isinstance(d.decorator, cst.Attribute) else "")
                          for d in item.decorators]
            p = item.params
            params = [x for x in (*p.posonly_params, *p.params, *p.kwonly_params)]
            receiver, kind = None, method_kind(decorators)
            if kind != "static" and params and params[0] in (*p.posonly_params, *p.params):
                receiver = params[0].name.value
                params = params[1:]
            qual = f"{stmt.name.value}.{item.name.value}"
            out[(path, qual)] = MethodRef(path, qual, receiver, kind, tuple(x.name.value for x in params),
                                          {x.name.value: x.default for x in params if x.default is not None})
    return out


__all__ = ["ClassTable", "Instance", "MethodRef", "ObjectModel", "Target", "annotation_class", "method_kind",
           "method_signatures"]
