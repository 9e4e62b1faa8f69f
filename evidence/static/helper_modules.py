"""The code the entry reaches in the submission's helper modules (`kernel.modules`), analysed.

A library kernel is submitted as an entry file that imports the kernel, and the helpers that kernel
calls, from sibling modules. Those functions are helpers of the entry, not kernels of their own: the
static rules judge them as they judge a helper defined in the kernel file (a shared_hbm allocation
there is not at kernel level, its parameters are what the callers pass, never the task's inputs), and
findings and facts cite the helper module's own file:line.

`reach` follows, from the entry, the names each reached top-level function (or module-level alias)
reads: a name imported from a helper module (`from .m import f`, `from ..utils.m import f`, absolute
`from pkg.m import f` resolved as the simulator's loader does: the kernel file's folder first, then
the submission root), or a function read through an imported module (`from . import m` ... `m.f(...)`).
Imports inside functions and `from m import *` count. Methods called through objects of the
submission's classes are followed (`helper_classes`: the object's class known from a constructor call,
an annotation or `self`); a class none of whose methods is reached is not walked. `analyze_modules`
analyses each reached module once its callers are analysed, with the arguments their calls pass
(`engine.analyze(callers=...)`, a method's keyed `Cls.meth`).
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Sequence
from dataclasses import replace

from evidence.static.engine import Analysis, StaticAnalysisError, analyze, parse
from evidence.static.helper_args import top_level_defaults, top_level_params
from evidence.static.helper_classes import ClassTable, ObjectModel, method_signatures
from evidence.static.model import InputBinding
from evidence.static.records import mutated_fields, record_classes
from evidence.static.rules.shared_hbm_nested import CALLER_SKIPS, skips_check
from evidence.static.scope import Scope, is_main_guard
from evidence.static.unparsed import first_importer, parse_failure

# (module path, function name) of a name a file can call
Target = tuple[str, str]


def resolve(importer: str, module: str | None, level: int, files: Sequence[str], home: str) -> str | None:
    """The submission file an import names (`module` at `level` dots, from the file `importer`), or None."""
    parts = (module or "").split(".") if module else []
    if level:
        base = posixpath.dirname(importer)
        for _ in range(level - 1):
            base = posixpath.dirname(base)
        bases = [posixpath.join(base, *parts) if parts else base]
    else:
        bases = [posixpath.join(folder, *parts) for folder in dict.fromkeys((home, ""))]
    for b in bases:
        b = posixpath.normpath(b) if b else b
        for candidate in (b + ".py", posixpath.join(b, "__init__.py")):
            if candidate in files:
                return candidate
    return None


def imports(tree: ast.Module, path: str, files: Sequence[str], home: str,
            trees: dict[str, ast.Module] | None = None) -> tuple[dict[str, Target], dict[str, str]]:
    """({local name: (module, function)} of names imported from helper modules,
    {local name: module} of helper modules imported whole). Imports inside functions count (a name
    a function imports is read only there, and a kernel file rarely binds it twice); `from m import *`
    imports the names `m` exports (`__all__`, else its public top-level names; `trees` gives them)."""
    names: dict[str, Target] = {}
    mods: dict[str, str] = {}
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.ImportFrom):
            target = resolve(path, stmt.module, stmt.level, files, home)
            for alias in stmt.names:
                if alias.name == "*":
                    if target is not None and trees is not None:
                        names.update({n: (target, n) for n in exported(target, trees, files, home)})
                    continue
                local = alias.asname or alias.name
                sub = resolve(path, ((stmt.module + ".") if stmt.module else "") + alias.name, stmt.level, files, home)
                if sub is not None:  # `from . import m`: a module
                    mods[local] = sub
                elif target is not None:
                    names[local] = (target, alias.name)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                target = resolve(path, alias.name, 0, files, home)
                if target is not None and alias.asname:  # `import pkg.m as m`
                    mods[alias.asname] = target
    return names, mods


def exported(path: str, trees: dict[str, ast.Module], files: Sequence[str], home: str,
             seen: frozenset[str] = frozenset()) -> list[str]:
    """The names `from <path> import *` binds: its `__all__` when a literal list, else the public names
    its top level binds (definitions, assignments, imports, and what its own star imports bring)."""
    tree = trees.get(path)
    if tree is None or path in seen:
        return []
    found: list[str] = []
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == "__all__" and isinstance(stmt.value, (ast.List, ast.Tuple))):
            return [e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                found.extend(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                if alias.name == "*" and isinstance(stmt, ast.ImportFrom):
                    target = resolve(path, stmt.module, stmt.level, files, home)
                    if target is not None:
                        found.extend(exported(target, trees, files, home, seen | {path}))
                else:
                    found.append((alias.asname or alias.name).split(".")[0])
    return [n for n in dict.fromkeys(found) if not n.startswith("_")]


def _bound(tree: ast.Module) -> dict[str, tuple[ast.AST, int | None]]:
    """Top-level name -> (its last definition, def line of a function or None for an alias)."""
    bound: dict[str, tuple[ast.AST, int | None]] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound[stmt.name] = (stmt, stmt.lineno)
        elif isinstance(stmt, ast.ClassDef):  # its methods, by `Cls.meth` (no Python name reads as that)
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    bound[f"{stmt.name}.{item.name}"] = (item, item.lineno)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(t, ast.Name):
                    bound[t.id] = (stmt.value, None)
    return bound


def reach(tree: ast.Module, roots: set, names: dict[str, Target], mods: dict[str, str],
          classes: ClassTable | None = None, path: str = "") -> tuple[frozenset[int], set[str], set[tuple]]:
    """(def lines of the file's top-level functions and methods reached from `roots`, the names reached
    (`Cls.meth` for a method), the helper-module functions and methods they read). With `classes`, the
    methods called through objects of known class are followed (`helper_classes`), each with the class of
    the object it is called on: a root or a read method may be (`Cls.meth`, that class), and a method inherited
    from a base then reaches the overrides of that class (`self.step()` in `Base.run` on a `Sub`)."""
    bound = _bound(tree)
    lines: set[int] = set()
    reached: set[str] = set()
    out: set[tuple] = set()
    todo, seen, scanned = list(roots), set(), set()
    while todo:
        entry = todo.pop()
        name, receiver = entry if isinstance(entry, tuple) else (entry, None)
        if entry in seen:
            continue
        seen.add(entry)
        if name in names:
            out.add(names[name])
            continue
        if name not in bound:
            continue
        node, line = bound[name]
        if line is not None:
            lines.add(line)
            reached.add(name)
        if name not in scanned:  # the names a body reads are the same whatever object it is called on
            scanned.add(name)
            for n in ast.walk(node):
                if isinstance(n, ast.Name) and n.id != name:
                    todo.append(n.id)
                elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in mods:
                    out.add((mods[n.value.id], n.attr))
        if classes is not None and line is not None:
            owner = (path, name.partition(".")[0]) if "." in name else None
            for (module, method), on in classes.targets(path, node, owner, receiver if owner is not None else None):
                follow = (method, on) if on is not None else method
                if module == path:
                    todo.append(follow)
                else:
                    out.add((module, follow))
    return frozenset(lines), reached, out


def _scope(tree: ast.Module, lines: frozenset[int]) -> Scope:
    """The reached functions and methods of a helper module; a class none of whose methods is reached is not walked."""
    top = {s.lineno for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    walked = set()
    for c in tree.body:
        if isinstance(c, ast.ClassDef):
            methods = {m.lineno for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
            top |= methods
            if methods & lines:
                walked.add(c.name)
    guards = frozenset(s.lineno for s in tree.body if isinstance(s, ast.If) and is_main_guard(s.test))
    return Scope(lines, guards, frozenset(top), skip_classes=True, walked_classes=frozenset(walked))


def analyze_modules(files: dict[str, str], kernel_file: str, modules: Sequence[str], entry: str | None,
                    options: dict[str, object] | None = None,
                    inputs: Sequence[InputBinding] = ()) -> tuple[Analysis, list[Analysis]]:
    """(the kernel file's analysis, the analyses of the helper modules the entry reaches, callers first).
    The kernel file's analysis is the one `analyze` makes of it alone (its calls into helper modules
    are recorded besides)."""
    home = posixpath.dirname(kernel_file)
    paths = [kernel_file, *[m for m in modules if m.endswith(".py") and m in files and m != kernel_file]]
    trees: dict[str, ast.Module] = {}
    for p in paths:
        try:
            trees[p] = ast.parse(files[p])
        except (SyntaxError, ValueError, RecursionError):  # told below (a helper) or raised by analyze (the kernel)
            continue
    if kernel_file not in trees:
        return analyze(files[kernel_file], file=kernel_file, inputs=inputs, entry=entry, options=options), []
    # a helper module that does not parse is evidence, not a silent gap (`unparsed`)
    unparsed = [m for m in (parse_failure(files[p], p) for p in paths if p not in trees) if m is not None]
    table = {p: imports(trees[p], p, paths, home, trees) for p in trees}
    classes = ClassTable(trees, lambda path, name: _origin((path, name), table), lambda path: table[path][1])
    # reach, module by module, from the entry: {module: function names reached}, {file: callees}
    callees: dict[str, set[Target]] = {}
    roots = {entry} if entry is not None and entry in _bound(trees[kernel_file]) else {
        s.name for s in trees[kernel_file].body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    todo = [(kernel_file, roots)]
    reached: dict[str, frozenset[int]] = {}  # def lines of the functions reached in each file
    asked: dict[str, set[str]] = {}  # the names each file was asked for (a name asked twice is followed once)
    while todo:
        path, names = todo.pop(0)
        names = names - asked.get(path, set())
        if not names and path in reached:
            continue
        asked.setdefault(path, set()).update(names)
        lines, _, out = reach(trees[path], names, *table[path], classes, path)
        reached[path] = reached.get(path, frozenset()) | lines
        callees.setdefault(path, set()).update(out)
        for mod, fn in out:
            if mod in trees and mod != kernel_file:
                todo.append((mod, {fn}))
    order = _callers_first(kernel_file, callees)
    parsed = {}
    for p in order:
        try:
            parsed[p] = parse(files[p], p)
        except StaticAnalysisError:
            if p == kernel_file:
                raise
            unparsed += [m for m in [parse_failure(files[p], p)] if m is not None]  # nested deeper than libcst takes
    order = [p for p in order if p in parsed]
    bad = {m.file for m in unparsed}
    good = {p: t for p, t in trees.items() if p not in bad}
    unparsed = [replace(m, imported_by=first_importer(m.file, good, paths, home, resolve)) for m in unparsed]
    signatures = {p: (top_level_params(parsed[p]), top_level_defaults(parsed[p])) for p in order}
    methods = {k: v for p in order for k, v in method_signatures(p, parsed[p]).items()}
    mutated = mutated_fields(trees.values())
    records_of = {p: record_classes(trees[p], mutated) for p in order}
    calls: dict[str, dict[str, list[dict[str, object]]]] = {}
    skipping: set[str] = set()  # files reached from a kernel whose decorator skips the nested shared_hbm check
    results: list[Analysis] = []
    first: Analysis | None = None
    for path in order:
        names, mods = table[path]
        names = {local: _defined(target, table, signatures, records_of) for local, target in names.items()}
        imported = {}
        for local, (mod, fn) in names.items():
            if mod in signatures and fn in signatures[mod][0]:
                imported[local] = (signatures[mod][0][fn], signatures[mod][1].get(fn, {}))
        for local, mod in mods.items():
            if mod in signatures:
                for fn, params in signatures[mod][0].items():
                    imported[f"{local}.{fn}"] = (params, signatures[mod][1].get(fn, {}))
        records = dict(records_of[path])
        records.update({local: records_of[mod][cls] for local, (mod, cls) in names.items()
                        if cls in records_of.get(mod, {})})
        objects = ObjectModel(path, classes, methods)
        if path == kernel_file:
            a = first = analyze(files[path], file=path, inputs=inputs, entry=entry, options=options, imported=imported,
                                module=parsed[path], records=records, objects=objects)
        else:
            opts = {**(options or {}), CALLER_SKIPS: True} if path in skipping else options
            a = analyze(files[path], file=path, inputs=inputs, entry=None, module=parsed[path], options=opts,
                        scope=_scope(trees[path], reached[path]), imported=imported, callers=calls.get(path),
                        takes_inputs=False, records=records, objects=objects)
            results.append(a)
        skips = path in skipping or any(f.is_kernel and skips_check(f.node) for f in a.functions)
        for key, sites in a.imported_calls.items():
            module, _, fn = key.partition(".")
            target = names[key] if key in names else (mods[module], fn) if fn and module in mods else None
            if target is not None:
                calls.setdefault(target[0], {}).setdefault(target[1], []).extend(sites)
                if skips:
                    skipping.add(target[0])
        for (module, method), sites in a.method_calls.items():
            calls.setdefault(module, {}).setdefault(method, []).extend(sites)
            if skips:
                skipping.add(module)
    assert first is not None
    first.unparsed_modules = unparsed
    return first, results


def _defined(target: Target, table, signatures, classes) -> Target:
    """Where an imported name is defined: a package's `__init__.py` (or any module) re-exporting it with
    `from .impl import f` sends it on to `impl`."""
    for _ in range(8):
        mod, name = target
        if name in signatures.get(mod, ({}, {}))[0] or name in classes.get(mod, {}) or mod not in table:
            break
        nxt = table[mod][0].get(name)
        if nxt is None:
            break
        target = nxt
    return target


def _origin(target: Target, table) -> Target:
    """The (module, name) an import finally names, through modules re-exporting it."""
    for _ in range(8):
        nxt = table.get(target[0], ({}, {}))[0].get(target[1])
        if nxt is None:
            break
        target = nxt
    return target


def _callers_first(start: str, callees: dict[str, set[Target]]) -> list[str]:
    """Files in an order where each comes after the files that call into it (the import graph's
    reverse post-order; a cycle keeps the order in which it was entered)."""
    done: set[str] = set()
    post: list[str] = []

    def visit(path: str) -> None:
        done.add(path)
        for mod in sorted({m for m, _ in callees.get(path, ())}):
            if mod not in done and mod in callees:
                visit(mod)
        post.append(path)

    visit(start)
    return post[::-1]


__all__ = ["analyze_modules", "imports", "reach", "resolve"]
