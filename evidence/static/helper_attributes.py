"""The class of an attribute's object (`self.pool`, `mgr.pools`), from the submission's own code: what every
assignment `self.<attr> = ...` in the methods of the class, its bases and its subclasses agrees on (a class-level
annotation too; an item stored into it, `self.pools[k] = Pool(k)` or `self.pools.append(...)`, makes it a
container), unless code anywhere assigns an attribute of that name through another object. Functions of
a `helper_types.Typer` (which types the assigned values and keeps the caches)."""

from __future__ import annotations

import ast

from evidence.static.helper_types import _CYCLE, _EMPTY, _FUNCS, Items, _decorators, _empty, _own_nodes

Target = tuple[str, str]


def attribute_type(typer, cls: Target, attr: str) -> object:
    return typer.memo(typer._attrs, (cls, attr), _CYCLE,
                      lambda: None if attr in _foreign_attrs(typer) else _attribute_type(typer, cls, attr))


def _attribute_type(typer, cls: Target, attr: str) -> object:
    found: set[object] = set()
    for key in _family(typer, cls):
        info = typer.classes.classes[key]
        for stmt in _class_body(typer, key):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == attr:
                found.add(typer.classes.class_of(key[0], stmt.annotation))
            elif isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in stmt.targets):
                found.add(None)
        for method in info.methods.values():
            s = typer.scope(key[0], method, key)
            me = s.receiver_name
            if me is None:
                continue
            for n in _own_nodes(method):
                for t, value in _attr_stores(n, me, attr):
                    t_kind = typer._plain(typer.type_of(value, s))
                    if t == "set":
                        found.add(_EMPTY if t_kind is None and _empty(value) else t_kind)
                    elif t == "item":
                        found.add(Items(t_kind) if isinstance(t_kind, tuple) else None)
                    else:
                        found.add(None)
                if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and _is_attr(n.func.value, me, attr)):
                    typer._mutation(n, lambda kind, v, s=s: found.add(
                        None if kind == "type" else _item_or_items(typer, kind, v, s)))
    found.discard(_EMPTY)
    return next(iter(found)) if len(found) == 1 else None


def _item_or_items(typer, kind: str, v: ast.expr, s) -> object:
    t = typer._plain(typer.type_of(v, s))
    if kind == "item":
        return Items(t) if isinstance(t, tuple) else None
    return t if isinstance(t, Items) else None


def _class_body(typer, key: Target) -> list[ast.stmt]:
    for stmt in typer.trees[key[0]].body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == key[1]:
            return stmt.body
    return []


def _family(typer, cls: Target) -> set[Target]:
    """`cls`, its bases and its subclasses among the submission's classes."""
    up: dict[Target, set[Target]] = {}
    for key, info in typer.classes.classes.items():
        up[key] = {b for b in (typer.classes.class_of(key[0], base) for base in info.bases) if b is not None}
    family, todo = set(), [cls]
    while todo:  # bases
        k = todo.pop()
        if k not in family and k in up:
            family.add(k)
            todo.extend(up[k])
    grew = True
    while grew:  # subclasses of anything in the family
        grew = False
        for key, bases in up.items():
            if key not in family and bases & family:
                family.add(key)
                grew = True
    return family


def _foreign_attrs(typer) -> set[str]:
    """Attribute names some code assigns through an object other than a method's own receiver."""
    if typer._foreign is None:
        typer._foreign = set()
        for tree in typer.trees.values():
            for fn, receiver in _functions_with_receivers(tree):
                for n in _own_nodes(fn):
                    targets = (n.targets if isinstance(n, ast.Assign) else [n.target]
                               if isinstance(n, (ast.AnnAssign, ast.AugAssign)) else [])
                    for t in targets:
                        for a in (x for x in ast.walk(t) if isinstance(x, ast.Attribute)):
                            if a is t and isinstance(a.value, ast.Name) and a.value.id == receiver:
                                continue
                            if a is t or isinstance(t, (ast.Tuple, ast.List)):
                                typer._foreign.add(a.attr)
    return typer._foreign


def _is_attr(node: ast.expr, receiver: str, attr: str) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == attr and isinstance(node.value, ast.Name)
            and node.value.id == receiver)


def _attr_stores(n: ast.AST, receiver: str, attr: str):
    """("set" | "item" | "other", value) for each store into `receiver.attr` (or an item of it) by `n`."""
    if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
        for t in n.targets if isinstance(n, ast.Assign) else [n.target]:
            if _is_attr(t, receiver, attr):
                yield "set", n.value
            elif isinstance(t, ast.Subscript) and _is_attr(t.value, receiver, attr):
                yield "item", n.value
            elif isinstance(t, (ast.Tuple, ast.List)) and any(_is_attr(x, receiver, attr) for x in ast.walk(t)):
                yield "other", n.value
    elif isinstance(n, ast.AugAssign) and (_is_attr(n.target, receiver, attr) or (
            isinstance(n.target, ast.Subscript) and _is_attr(n.target.value, receiver, attr))):
        yield "other", n.value


def _functions_with_receivers(tree: ast.Module):
    """(function, its receiver parameter or None) of a module's functions and methods (the module too)."""
    yield tree, None
    for stmt in tree.body:
        if isinstance(stmt, _FUNCS):
            yield stmt, None
        elif isinstance(stmt, ast.ClassDef):
            for m in stmt.body:
                if isinstance(m, _FUNCS):
                    a = [*m.args.posonlyargs, *m.args.args]
                    static = "staticmethod" in _decorators(m)
                    yield m, (a[0].arg if a and not static else None)


__all__ = ["attribute_type"]
