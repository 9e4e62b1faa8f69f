"""Which of the submission's classes an expression's object belongs to, read from the submission's own code.

`helper_classes` follows calls through objects; this module says what object a receiver is when that is
decidable without running anything:

- a name every binding of which in its function agrees (a constructor `C(...)`, an annotation `C` /
  `Optional[C]` / `"C"`, `self`, a loop over a container of `C`, the result of a call below); a parameter
  with no annotation and a default of None that the function rebinds (`if sbm is None: sbm = C(...)`)
  is that class only when every call of a function of that name in the submission passes nothing, None
  or an object of that class;
- the result of a function or method (a factory, `mgr.buffers()`, `TensorView(t).slice(...)`): its
  return annotation, else the one class every `return` of its body gives (`return C(...)`, `return self`
  as the receiver's class; `return None` aside);
- an attribute (`self.pool`, `mgr.pools`): what every assignment `self.<attr> = ...` in the methods of
  the class, its bases and subclasses agrees on, unless code elsewhere assigns an attribute of that name
  through another object (`helper_attributes`);
- a container (`[Pool(i) for i in ...]`, `{"a": Pool(1)}`, a list `append`ed objects of one class) and
  its items (`pools[i]`, `for p in pools`).

Anything else (two classes, an unannotated parameter callers fill, a class outside the submission) has
no type: the call is not followed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

Target = tuple[str, str]

_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_ADD_ITEM = {"append": 0, "add": 0, "insert": 1, "setdefault": 1}  # method -> position of the item argument
_ADD_ITEMS = ("extend", "update")


@dataclass(frozen=True)
class Items:
    """A list, tuple, set or dict (its values) holding objects of one class."""

    cls: Target


# what a binding contributes: a class, Items, None (unknown), or one of these markers
_EMPTY = "empty"  # `[]`, `{}`: an empty container says nothing about its items
_NULLABLE = "nullable"  # an unannotated parameter defaulting to None (decided by its callers)
_CYCLE = "cycle"  # a name read while its own type is being worked out (`x = x or C()`)


class _Scope:
    """The bindings of one function's names, typed lazily."""

    def __init__(self, path: str, fn: ast.AST, owner: Target | None, receiver: Target | None) -> None:
        self.path, self.fn, self.owner = path, fn, owner
        self.bindings: dict[str, list[tuple[str, object]]] = {}
        self.types: dict[str, object] = {}
        self.params: dict[str, int] = {}  # nullable parameter -> its position (after the receiver)
        self.receiver_name: str | None = None
        self.receiver = receiver


class Typer:
    """Static types over the submission's trees; `classes` is the `ClassTable` (class names, lookups);
    attributes are typed by `helper_attributes`."""

    def __init__(self, trees: dict[str, ast.Module], classes, modules: Callable[[str], dict[str, str]]) -> None:
        self.trees = trees
        self.classes = classes
        self.modules = modules
        self._scopes: dict[tuple[int, Target | None], _Scope] = {}
        self._returns: dict[tuple[Target, Target | None], object] = {}
        self._attrs: dict[tuple[Target, str], object] = {}
        self._busy: set[object] = set()
        self._call_list: list[tuple[ast.Call, tuple[str, ast.AST, Target | None]]] | None = None
        self._foreign: set[str] | None = None
        self._functions = {(p, s.name): s for p, t in trees.items() for s in t.body if isinstance(s, _FUNCS)}

    # -- scopes ---------------------------------------------------------------------------
    def scope(self, path: str, fn: ast.AST, owner: Target | None, receiver: Target | None = None) -> _Scope:
        key = (id(fn), receiver or owner)
        if key not in self._scopes:
            self._scopes[key] = self._build(path, fn, owner, receiver or owner)
        return self._scopes[key]

    def _build(self, path: str, fn: ast.AST, owner: Target | None, receiver: Target | None) -> _Scope:
        s = _Scope(path, fn, owner, receiver)
        add = lambda name, kind, v: s.bindings.setdefault(name, []).append((kind, v))  # noqa: E731
        if isinstance(fn, _FUNCS):
            a = fn.args
            positional = [*a.posonlyargs, *a.args]
            params = [*positional, *a.kwonlyargs]
            defaults = dict(zip([p.arg for p in positional][len(positional) - len(a.defaults):], a.defaults))
            defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
            method = owner is not None and positional and "staticmethod" not in _decorators(fn)
            for i, p in enumerate(params):
                if method and i == 0:
                    s.receiver_name = p.arg
                    add(p.arg, "type", receiver)
                elif p.annotation is not None:
                    add(p.arg, "type", self.classes.class_of(path, p.annotation))
                elif isinstance(defaults.get(p.arg), ast.Constant) and defaults[p.arg].value is None:
                    add(p.arg, "type", _NULLABLE)
                    s.params[p.arg] = i - (1 if method else 0) if p in positional else -1
                else:
                    add(p.arg, "type", None)
            for extra in (a.vararg, a.kwarg):
                if extra is not None:
                    add(extra.arg, "type", None)
        for n in _own_nodes(fn):
            if isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        if n.value is not None:
                            add(t.id, "expr", n.value)
                        if isinstance(n, ast.AnnAssign):
                            add(t.id, "type", self.classes.class_of(path, n.annotation))
                    elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and n.value is not None:
                        add(t.value.id, "item", n.value)  # `pools[k] = Pool(k)`
                    else:
                        for name in _names(t):
                            add(name, "type", None)
            elif isinstance(n, ast.AugAssign):
                for name in _names(n.target):
                    add(name, "type", None)
            elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
                if isinstance(n.target, ast.Name):
                    add(n.target.id, "elem", n.iter)
                else:
                    for name in _names(n.target):
                        add(name, "type", None)
            elif isinstance(n, ast.NamedExpr):
                add(n.target.id, "expr", n.value)
            elif isinstance(n, (ast.With, ast.AsyncWith)):
                for item in n.items:
                    for name in _names(item.optional_vars) if item.optional_vars is not None else []:
                        add(name, "type", None)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for alias in n.names:
                    add((alias.asname or alias.name).split(".")[0], "type", None)
            elif isinstance(n, (*_FUNCS, ast.ClassDef, ast.Lambda)) and n is not fn:
                if not isinstance(n, ast.Lambda):
                    add(n.name, "type", None)
                if not isinstance(n, ast.ClassDef):  # a nested function's parameters shadow the names they share
                    a = n.args
                    for p in (*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)):
                        add(p.arg, "type", None)
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                for name in n.names:
                    add(name, "type", None)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                add(n.name, "type", None)
            elif isinstance(n, ast.Delete):
                for name in (x for t in n.targets for x in _names(t)):
                    add(name, "type", None)
            elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                  and n.func.value.id in _bound_names(fn)):
                self._mutation(n, lambda kind, v, name=n.func.value.id: add(name, kind, v))
        return s

    @staticmethod
    def _mutation(call: ast.Call, add) -> None:
        """`x.append(v)` adds an item `v` to container `x`; `x.extend(e)` the items of `e`."""
        attr = call.func.attr  # type: ignore[union-attr]
        if attr in _ADD_ITEM:
            at = _ADD_ITEM[attr]
            add("item", call.args[at]) if len(call.args) > at and not call.keywords else add("type", None)
        elif attr in _ADD_ITEMS:
            add("expr", call.args[0]) if len(call.args) == 1 and not call.keywords else add("type", None)

    def memo(self, cache: dict, key, on_cycle: object, compute: Callable[[], object], busy_key=None) -> object:
        """`cache[key]`, computed once by `compute`; `on_cycle` when asked again while it is being computed (a
        type that depends on itself). `busy_key` names the computation where `key` alone does not."""
        if key in cache:
            return cache[key]
        busy = key if busy_key is None else busy_key
        if busy in self._busy:
            return on_cycle
        self._busy.add(busy)
        try:
            result = compute()
        finally:
            self._busy.discard(busy)
        cache[key] = result
        return result

    def name_type(self, s: _Scope, name: str) -> object:
        return self.memo(s.types, name, _CYCLE, lambda: self._name_type(s, name), busy_key=(id(s), name))

    def _name_type(self, s: _Scope, name: str) -> object:
        found: set[object] = set()
        for kind, v in s.bindings.get(name, []):
            if kind == "type":
                t = v
            elif kind == "expr":
                t = self.type_of(v, s)
                t = _EMPTY if t is None and _empty(v) else t
            elif kind == "item":
                t = self.type_of(v, s)
                t = Items(t) if isinstance(t, tuple) else None
            else:  # elem: a loop over a container
                t = self.type_of(v, s)
                t = t.cls if isinstance(t, Items) else None
            found.add(t)
        found -= {_EMPTY, _CYCLE}
        if _NULLABLE in found:
            found.discard(_NULLABLE)
            if len(found) == 1 and not self._callers_agree(s, name, next(iter(found))):
                found.add(None)
        return next(iter(found)) if len(found) == 1 else None

    # -- expressions ----------------------------------------------------------------------
    def type_of(self, node: ast.expr | None, s: _Scope) -> object:
        """A class (`Target`), `Items(class)`, or None; `_CYCLE` for a name being worked out."""
        if isinstance(node, ast.Name):
            if node.id in s.bindings:
                return self.name_type(s, node.id)
            return None
        if isinstance(node, ast.Call):
            return self._call_type(node, s)
        if isinstance(node, ast.Attribute):
            owner = self._plain(self.type_of(node.value, s))
            from evidence.static.helper_attributes import attribute_type  # (it imports this module)

            return attribute_type(self, owner, node.attr) if isinstance(owner, tuple) else None
        if isinstance(node, ast.Subscript):
            inner = self._plain(self.type_of(node.value, s))
            return inner.cls if isinstance(inner, Items) and not isinstance(node.slice, ast.Slice) else (
                inner if isinstance(inner, Items) else None)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            elts = node.values if isinstance(node, ast.Dict) else node.elts
            if not elts or any(isinstance(e, ast.Starred) for e in elts) or (
                    isinstance(node, ast.Dict) and None in node.keys):
                return None
            found = {self._plain(self.type_of(e, s)) for e in elts}
            one = next(iter(found)) if len(found) == 1 else None
            return Items(one) if isinstance(one, tuple) else None
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            one = self._plain(self.type_of(node.value if isinstance(node, ast.DictComp) else node.elt, s))
            return Items(one) if isinstance(one, tuple) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):  # `[Pool()] * n`
            for side in (node.left, node.right):
                if isinstance(side, (ast.List, ast.Tuple)):
                    return self.type_of(side, s)
            return None
        if isinstance(node, (ast.BoolOp, ast.IfExp)):  # `sbm or make_pool()`, `a if c else b`
            parts = node.values if isinstance(node, ast.BoolOp) else [node.body, node.orelse]
            found = {self.type_of(p, s) for p in parts} - {_CYCLE}
            found -= {None} if isinstance(node, ast.BoolOp) and _has_none_literal(parts) else set()
            return next(iter(found)) if len(found) == 1 else None
        return None

    @staticmethod
    def _plain(t: object) -> object:
        return None if t == _CYCLE else t

    def _call_type(self, node: ast.Call, s: _Scope) -> object:
        func = node.func
        made = self.classes.class_of(s.path, func) if not (isinstance(func, ast.Name) and func.id in s.bindings) else None
        if made is not None:
            return made
        target = self.call_target(node, s)
        if target is None:
            return None
        fn, receiver = target
        return self.return_type(fn, receiver)

    def call_target(self, node: ast.Call, s: _Scope) -> tuple[Target, Target | None] | None:
        """(the function or `Cls.meth` a call reaches, the receiver's class) when decidable."""
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in s.bindings:
                return None
            target = self.classes.resolve(s.path, func.id)
            return (target, None) if target in self._functions else None
        if not isinstance(func, ast.Attribute):
            return None
        if isinstance(func.value, ast.Name) and func.value.id not in s.bindings:
            mod = self.modules(s.path).get(func.value.id)
            if mod is not None:
                return ((mod, func.attr), None) if (mod, func.attr) in self._functions else None
            cls = self.classes.local(s.path).get(func.value.id)  # `C.make(...)`
            if cls is not None:
                m = self.classes.lookup(cls, func.attr)
                return (m, cls) if m is not None else None
            return None
        owner = self._plain(self.type_of(func.value, s))
        if not isinstance(owner, tuple):
            return None
        m = self.classes.lookup(owner, func.attr)
        return (m, owner) if m is not None else None

    def return_type(self, fn: Target, receiver: Target | None) -> object:
        return self.memo(self._returns, (fn, receiver), None, lambda: self._return_type(fn, receiver))

    def _return_type(self, fn: Target, receiver: Target | None) -> object:
        if "." in fn[1]:
            node = self.classes.method_node(fn)
            owner = (fn[0], fn[1].partition(".")[0])
        else:
            node, owner = self._functions.get(fn), None
        if node is None:
            return None
        if node.returns is not None:
            return self.classes.class_of(fn[0], node.returns)
        s = self.scope(fn[0], node, owner, receiver if owner is not None else None)
        found = set()
        for n in _body_nodes(node):
            if isinstance(n, (ast.Yield, ast.YieldFrom)):
                return None
            if isinstance(n, ast.Return):
                if n.value is None or (isinstance(n.value, ast.Constant) and n.value.value is None):
                    continue
                found.add(self._plain(self.type_of(n.value, s)))
        return next(iter(found)) if len(found) == 1 else None

    # -- callers of a function with a nullable parameter ----------------------------------
    def _callers_agree(self, s: _Scope, name: str, cls: object) -> bool:
        """Every call of a function named like `s.fn` passes nothing, None or a `cls` object for `name`."""
        if not isinstance(s.fn, _FUNCS) or not isinstance(cls, tuple):
            return False
        position = s.params.get(name, -1)
        fname = s.fn.name
        for call, (path, fn, owner) in self._calls():
            callee = call.func.id if isinstance(call.func, ast.Name) else (
                call.func.attr if isinstance(call.func, ast.Attribute) else None)
            if callee != fname:
                continue
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
                return False
            passed = [k.value for k in call.keywords if k.arg == name]
            if 0 <= position < len(call.args):
                passed.append(call.args[position])
            for arg in passed:
                if isinstance(arg, ast.Constant) and arg.value is None:
                    continue
                if self._plain(self.type_of(arg, self.scope(path, fn, owner))) != cls:
                    return False
        return True

    def _calls(self) -> list[tuple[ast.Call, tuple[str, ast.AST, Target | None]]]:
        if self._call_list is None:
            found = []
            for path, tree in self.trees.items():
                units: list[tuple[ast.AST, Target | None]] = [(tree, None)]
                for stmt in tree.body:
                    if isinstance(stmt, _FUNCS):
                        units.append((stmt, None))
                    elif isinstance(stmt, ast.ClassDef):
                        units += [(m, (path, stmt.name)) for m in stmt.body if isinstance(m, _FUNCS)]
                for fn, owner in units:
                    for n in _own_nodes(fn):
                        if isinstance(n, ast.Call):
                            found.append((n, (path, fn, owner)))
            self._call_list = found
        return self._call_list


def _decorators(fn: ast.AST) -> list[str]:
    out = []
    for d in getattr(fn, "decorator_list", []):
        d = d.func if isinstance(d, ast.Call) else d
        out.append(d.attr if isinstance(d, ast.Attribute) else d.id if isinstance(d, ast.Name) else "")
    return out


def _own_nodes(fn: ast.AST):
    """The nodes of `fn` (a function, or a module's top level), nested functions' included except at module level."""
    if isinstance(fn, ast.Module):
        for stmt in fn.body:
            if not isinstance(stmt, (*_FUNCS, ast.ClassDef)):
                yield from ast.walk(stmt)
        return
    yield from ast.walk(fn)


def _body_nodes(fn: ast.AST):
    """The nodes of a function's own body: nested functions, lambdas and classes left out."""
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        n = todo.pop()
        if isinstance(n, (*_FUNCS, ast.Lambda, ast.ClassDef)):
            continue
        yield n
        todo.extend(ast.iter_child_nodes(n))


def _names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for el in target.elts for n in _names(el)]
    if isinstance(target, ast.Starred):
        return _names(target.value)
    return []


def _bound_names(fn: ast.AST) -> set[str]:
    cache = getattr(fn, "_bound_names", None)
    if cache is None:
        cache = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if isinstance(fn, _FUNCS):
            a = fn.args
            cache |= {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
        fn._bound_names = cache  # type: ignore[attr-defined]
    return cache


def _empty(node: ast.expr) -> bool:
    """`[]`, `{}`, `()`, `list()`, `dict()`: a container with nothing in it yet."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and not node.elts:
        return True
    if isinstance(node, ast.Dict) and not node.keys:
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "dict")
            and not node.args and not node.keywords)


def _has_none_literal(parts: list[ast.expr]) -> bool:
    return any(isinstance(p, ast.Constant) and p.value is None for p in parts)


__all__ = ["Items", "Typer"]
