"""Line spans for libcst nodes without libcst's PositionProvider, and the walk order.

PositionProvider re-generates the whole file to measure it, which costs more than the parse and
all rules together. CPython's `ast` already knows every line, so `AstLines` parses the source
with `ast` (about 10x faster than libcst) and hands out, per node type, the spans in source
order. The engine visits libcst nodes in pre-order via `children` (libcst's public, lexically
ordered `CSTNode.children`), which for nodes of one type is the same source order (outer node
first on ties), so the i-th libcst `Call` gets the i-th `ast.Call`'s span. Untracked node types
take the span of their innermost tracked ancestor. If the per-type counts disagree at the end of
the walk, the caller redoes the analysis with PositionProvider. Nothing here reads libcst
internals; a node whose children cannot be placed raises `PositionError`.
"""

from __future__ import annotations

import ast
import dataclasses

import libcst as cst

from evidence.static.nesting import parsed

TRACKED: dict[type, tuple[type, ...]] = {
    cst.Call: (ast.Call,), cst.BinaryOperation: (ast.BinOp,), cst.For: (ast.For, ast.AsyncFor),
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef), cst.If: (ast.If,), cst.While: (ast.While,),
    cst.Assign: (ast.Assign,), cst.AugAssign: (ast.AugAssign,), cst.AnnAssign: (ast.AnnAssign,),
    cst.Return: (ast.Return,), cst.Expr: (ast.Expr,), cst.IfExp: (ast.IfExp,), cst.Comparison: (ast.Compare,),
    cst.UnaryOperation: (ast.UnaryOp,), cst.Subscript: (ast.Subscript,), cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,), cst.Import: (ast.Import,), cst.ImportFrom: (ast.ImportFrom,),
}
_AST_TO_CST = {a: c for c, group in TRACKED.items() for a in group}


class AstLines:
    def __init__(self, source: str) -> None:
        spans: dict[type, list[tuple[int, int, int, int]]] = {c: [] for c in TRACKED}
        for node in ast.walk(parsed(source)):
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


class PositionError(RuntimeError):
    """libcst handed back a node whose children or position cannot be placed: a bug or an
    incompatible libcst release, never a property of the kernel. Raised, never papered over."""


# Fields that hold only layout (whitespace, punctuation, operators): never walked.
_SKIP_FIELD = ("whitespace", "lpar", "rpar", "leading_lines", "lines_after", "comma", "equal", "semicolon",
               "colon", "header", "footer", "newline", "dot", "operator", "asynchronous", "arrow", "walrus")
_FIELDS: dict[type, list[str]] = {}  # fields that may hold nodes; a field once seen holding a str etc. is dropped
_ORDER: dict[tuple[type, tuple[str, ...]], tuple[int, ...]] = {}


def _fields(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if not any(f.name.startswith(s) or f.name.endswith(s) for s in _SKIP_FIELD)]


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The node's semantic children (layout fields left out) in source order.

    The order comes from libcst's public `CSTNode.children` (documented as lexical order),
    resolved once per node class and set of non-empty fields, since `children` itself rebuilds
    the node. A child that `children` does not list raises `PositionError`.
    """
    cls = type(node)
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = _fields(cls)
    if not fields:
        return []
    names: list[str] = []
    values: list[object] = []
    plain: list[str] = []
    for name in fields:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode) or (isinstance(value, (tuple, list)) and value):
            names.append(name)
            values.append(value)
        elif value is not None and not isinstance(value, (tuple, list)):
            plain.append(name)  # a str/bool/... field (Name.value): never a child
    for name in plain:
        fields.remove(name)
    key = (cls, tuple(names))
    order = _ORDER.get(key)
    if order is None:
        order = _ORDER[key] = _lexical_order(node, names, values)
    out: list[cst.CSTNode] = []
    for i in order:
        value = values[i]
        if isinstance(value, cst.CSTNode):
            out.append(value)
        else:
            out.extend(value)  # type: ignore[arg-type]
    return out


def _lexical_order(node: cst.CSTNode, names: list[str], values: list[object]) -> tuple[int, ...]:
    index = {id(child): i for i, child in enumerate(node.children)}
    where: list[int] = []
    for name, value in zip(names, values):
        first = value if isinstance(value, cst.CSTNode) else value[0]  # type: ignore[index]
        if id(first) not in index:
            raise PositionError(f"libcst {type(node).__name__}.{name} is not among the node's children; "
                                "cannot order its children (incompatible libcst?)")
        where.append(index[id(first)])
    return tuple(sorted(range(len(names)), key=where.__getitem__))
