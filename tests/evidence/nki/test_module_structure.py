"""The simulator's modules form a layered import graph (issue 8, deliverable 5).

No module-level import cycle among `evidence.nki` modules, no imports after the first definition of a
module (the old "import at the bottom" cycle breakers), and no private name imported from another
module: what several modules need is public in the module that owns it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import evidence.nki

ROOT = Path(evidence.nki.__file__).resolve().parent
PACKAGE = "evidence.nki"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        out[".".join([PACKAGE, *parts])] = path
    return out


MODULES = _modules()


def _target(node: ast.ImportFrom, name: str) -> str:
    """The module `from X import name` depends on: the submodule X.name when there is one, else X."""
    sub = f"{node.module}.{name}"
    return sub if sub in MODULES else (node.module or "")


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                deps = {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                deps = {_target(node, a.name) for a in node.names}
            else:
                continue
            # a package's own __init__ runs first for any of its submodules: not an edge of interest
            graph[module] |= {d for d in deps if d in MODULES and d != PACKAGE and not module.startswith(d + ".")}
    return graph


def test_module_level_imports_form_no_cycle():
    graph = _graph()
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                cycle = path[path.index(d):] + [d]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        path.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    # the layering the cycle used to break: tensor dispatches operators, ops build on tensor
    assert "evidence.nki.dispatch" in graph["evidence.nki.tensor"]
    assert "evidence.nki.tensor" in graph["evidence.nki.ops.base"]
    assert not graph["evidence.nki.dispatch"] & {"evidence.nki.ops", "evidence.nki.tensor", "evidence.nki.undefined"}


def test_no_imports_after_definitions():
    late = []
    for module, path in MODULES.items():
        seen_def = False
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                seen_def = True
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and seen_def:
                late.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not late, f"imports after the first definition (cycle breakers): {late}"


def test_no_private_names_imported_across_modules():
    private = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evidence"):
                private += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                            if a.name.startswith("_") and a.name != "__future__"]
    assert not private, f"private names imported from another module: {private}"


def test_the_checks_see_a_cycle(tmp_path):
    """The cycle check is not vacuous: the graph holds the real edges, and a back edge is a cycle."""
    graph = _graph()
    assert len(graph) >= 20 and sum(len(v) for v in graph.values()) >= 40
    graph["evidence.nki.dispatch"].add("evidence.nki.tensor")  # the edge the old bottom import made
    reach, todo = set(), ["evidence.nki.tensor"]
    while todo:
        m = todo.pop()
        for d in graph[m]:
            if d not in reach:
                reach.add(d)
                todo.append(d)
    assert "evidence.nki.tensor" in reach
