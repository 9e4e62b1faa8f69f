"""Which top-level functions of a kernel file are under review: the entry and what it reaches.

Kernel files often hold several kernels (a tutorial keeps every version of its kernel in one
file) next to host code. Findings about a kernel that is never run would be cited against the one
under review, so the analysis is scoped to the entry function and the top-level functions it
references, transitively (a call, a `kernel[grid]` launch, a function passed as an argument).
Module-level aliases count as references (`kernel = nki.jit(kernel_impl)`), and a name bound
twice resolves to its last top-level definition, as Python does when the module finishes loading.
`if __name__ == "__main__":` blocks are host code and never in scope.

Reading names with CPython's `ast` is cheap next to the libcst parse; the engine then walks every
function (positions stay in step) but runs no rule inside an out-of-scope one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    """What the engine analyses: the def lines (the `def` keyword's line) of the top-level
    functions in scope (None: all of them) and the lines of module-level `__main__` guards."""

    def_lines: frozenset[int] | None = None
    main_guards: frozenset[int] = frozenset()
    top_level: frozenset[int] = frozenset()  # def lines of every top-level function
    # a helper module's classes are walked only for the methods the entry reaches (`walked_classes`; the
    # def lines of their methods are in `top_level`, of the reached ones in `def_lines`)
    skip_classes: bool = False
    walked_classes: frozenset[str] = frozenset()

    def includes(self, def_line: int) -> bool:
        """Whether the function defined at `def_line` is analysed (nested ones follow their parent)."""
        return self.def_lines is None or def_line not in self.top_level or def_line in self.def_lines


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def is_main_guard(test: ast.expr) -> bool:
    """`__name__ == "__main__"` (either order)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def entry_scope(source: str | ast.Module, entry: str | None) -> Scope:
    """The scope of `entry`; every function is in scope when there is no entry, the source does
    not parse with this Python, or the entry is not a top-level name of the file."""
    try:
        tree = ast.parse(source) if isinstance(source, str) else source
    except SyntaxError:
        return Scope()
    guards = frozenset(s.lineno for s in tree.body if isinstance(s, ast.If) and is_main_guard(s.test))
    # name -> (def line of the function it finally names, or None for an alias, names it reads)
    bound: dict[str, tuple[int | None, set[str]]] = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound[stmt.name] = (stmt.lineno, _names(stmt) - {stmt.name})
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            reads = _names(stmt.value)
            for t in targets:
                if isinstance(t, ast.Name):
                    bound[t.id] = (None, reads)
    top = frozenset(s.lineno for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))
    if entry is None or entry not in bound:
        return Scope(None, guards, top)
    lines: set[int] = set()
    seen: set[str] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in seen or name not in bound:
            continue
        seen.add(name)
        line, reads = bound[name]
        if line is not None:
            lines.add(line)
        todo.extend(reads)
    return Scope(frozenset(lines), guards, top)


__all__ = ["Scope", "entry_scope", "is_main_guard"]
