"""Helper modules of a multi-file submission that do not parse, told as evidence rather than skipped.

A module with a syntax error (or nested deeper than the parsers take) cannot be analysed: none of the rules
read its code, so the findings of the kernel's other files say nothing about it. Python imports it with the
same SyntaxError, so a kernel that imports it does not load at all. One `nki.unparsed_module` item per such
module names its file:line and the parse error, and the file:line that imports it (when one does).
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.static.engine import StaticAnalysisError, parse

UNPARSED_KINDS = {
    "nki.unparsed_module": "a helper module of the submission that does not parse (a syntax error, or code nested "
                           "deeper than the parsers take): its code was not analysed, and a kernel that imports it "
                           "does not load (labels: error, imported_by = file:line or none)",
}


@dataclass(frozen=True)
class UnparsedModule:
    file: str
    line: int
    error: str  # one line: "syntax error: invalid syntax"
    imported_by: str | None = None  # "kernel.py:3", the first import of it in the files that parse


def parse_failure(source: str, file: str) -> UnparsedModule | None:
    """The module's parse error (as the engine words it for the kernel file), or None when it parses."""
    try:
        parse(source, file)
    except StaticAnalysisError as exc:
        where, _, error = str(exc).partition(": ")
        line = where.rpartition(":")[2]
        return UnparsedModule(file, int(line) if line.isdigit() else 1, (error or str(exc)).splitlines()[0])
    return None


def first_importer(bad: str, trees: dict[str, ast.Module], files: Sequence[str], home: str, resolve) -> str | None:
    """file:line of the first import, in the files that parse, that names the module `bad` (`resolve` is
    helper_modules.resolve)."""
    for path in sorted(trees):
        for node in ast.walk(trees[path]):
            targets: list[str | None] = []
            if isinstance(node, ast.ImportFrom):
                targets.append(resolve(path, node.module, node.level, files, home))
                targets += [resolve(path, ((node.module + ".") if node.module else "") + a.name, node.level, files, home)
                            for a in node.names if a.name != "*"]
            elif isinstance(node, ast.Import):
                targets += [resolve(path, a.name, 0, files, home) for a in node.names]
            if bad in targets:
                return f"{path}:{node.lineno}"
    return None


def unparsed_items(modules: Sequence[UnparsedModule], analyzer: str) -> list[EvidenceItem]:
    items = []
    for m in modules:
        name = posixpath.basename(m.file)
        use = (f"{m.imported_by} imports it, so the kernel does not load" if m.imported_by
               else "no file of the submission that parses imports it")
        items.append(EvidenceItem(
            id=make_id("nki.unparsed_module", m.file), kind="nki.unparsed_module", analyzer=analyzer,
            severity=Severity.high if m.imported_by else Severity.medium,
            title=f"Helper module {name} not analysed: {m.file}:{m.line}: {m.error}",
            detail=f"{m.file} does not parse, so no static rule read its code; {use}.",
            location=Location(file=m.file, start_line=m.line, end_line=m.line),
            labels={"error": m.error[:300], "imported_by": m.imported_by or "none"}))
    return items


__all__ = ["UNPARSED_KINDS", "UnparsedModule", "first_importer", "parse_failure", "unparsed_items"]
