"""Line spans for libcst nodes without libcst's PositionProvider.

PositionProvider re-generates the whole file to measure it, which costs more than the parse and
all rules together. CPython's `ast` already knows every line, so `AstLines` parses the source
with `ast` (about 10x faster than libcst) and hands out, per node type, the spans in source
order. The engine visits libcst nodes in pre-order, which for nodes of one type is the same
source order (outer node first on ties), so the i-th libcst `Call` gets the i-th `ast.Call`'s
span. Untracked node types take the span of their innermost tracked ancestor. If the per-type
counts disagree at the end of the walk, the caller redoes the analysis with PositionProvider.
"""

from __future__ import annotations

import ast

import libcst as cst

TRACKED: dict[type, tuple[type, ...]] = {
    cst.Call: (ast.Call,), cst.BinaryOperation: (ast.BinOp,), cst.For: (ast.For, ast.AsyncFor),
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef), cst.If: (ast.If,), cst.While: (ast.While,),
    cst.Assign: (ast.Assign,), cst.AugAssign: (ast.AugAssign,), cst.AnnAssign: (ast.AnnAssign,),
    cst.Return: (ast.Return,), cst.Expr: (ast.Expr,), cst.IfExp: (ast.IfExp,), cst.Comparison: (ast.Compare,),
    cst.UnaryOperation: (ast.UnaryOp,), cst.Subscript: (ast.Subscript,), cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,),
}
_AST_TO_CST = {a: c for c, group in TRACKED.items() for a in group}


class AstLines:
    def __init__(self, source: str) -> None:
        spans: dict[type, list[tuple[int, int, int, int]]] = {c: [] for c in TRACKED}
        for node in ast.walk(ast.parse(source)):
            c = _AST_TO_CST.get(type(node))
            if c is not None:
                spans[c].append((node.lineno, node.col_offset, -(node.end_lineno or node.lineno),
                                 -(node.end_col_offset or 0)))
        self.spans = {c: [(s[0], -s[2]) for s in sorted(v)] for c, v in spans.items()}
        self.counts: dict[type, int] = dict.fromkeys(TRACKED, 0)

    def take(self, cls: type) -> tuple[int, int] | None:
        """The next span of a tracked type (call once per visited node of that type, in order)."""
        i = self.counts[cls]
        self.counts[cls] = i + 1
        spans = self.spans[cls]
        return spans[i] if i < len(spans) else None

    def consistent(self) -> bool:
        return all(self.counts[c] == len(self.spans[c]) for c in TRACKED)


_SKIP_FIELD = ("whitespace", "lpar", "rpar", "leading_lines", "lines_after", "comma", "equal", "semicolon",
               "colon", "header", "footer", "newline", "dot", "operator", "asynchronous", "arrow", "walrus")
_FIELD_RE = None
_ORDER: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    """Fields of a libcst node class that can hold child nodes, in libcst's own visiting order
    (read once from its `_visit_and_replace_children`), minus whitespace and punctuation."""
    order = _ORDER.get(cls)
    if order is None:
        import dataclasses
        import inspect
        import re

        try:
            src = inspect.getsource(cls._visit_and_replace_children)  # type: ignore[attr-defined]
            names = re.findall(r'visit_\w+\(\s*self,\s*"(\w+)"', src)
        except (OSError, TypeError):
            names = []
        if not names:
            names = [f.name for f in dataclasses.fields(cls)]
        order = tuple(n for n in dict.fromkeys(names) if not any(n.startswith(s) or n.endswith(s) for s in _SKIP_FIELD))
        _ORDER[cls] = order
    return order
