"""Which NKI dialect a source targets: beta `neuronxcc.nki` or standalone `nki` (REFERENCE §0).

The two differ in semantics that rules depend on (nisa calls return tiles vs take `dst` first;
masks and the three range iterators only mean something in beta), so every rule declares the
dialects it judges and the runner never applies one dialect's rules to the other.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from evidence.static.shapes import canonical_module

BETA = "beta"
STANDALONE = "standalone"
DIALECTS = (BETA, STANDALONE)


@dataclass(frozen=True)
class DialectInfo:
    dialect: str  # beta | standalone
    source: str  # imports | dst_first | default
    aliases: dict[str, str]  # local name -> canonical dotted name (nl, nisa, nl.par_dim, np, ...)


def dotted(node: cst.BaseExpression) -> str:
    """`a.b.c` of a Name/Attribute chain (an import's module or name), "" for anything else."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def _imports(stmts: list[cst.BaseStatement]) -> list[cst.Import | cst.ImportFrom]:
    out: list[cst.Import | cst.ImportFrom] = []
    for stmt in stmts:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.extend(s for s in stmt.body if isinstance(s, (cst.Import, cst.ImportFrom)))
        elif isinstance(stmt, (cst.If, cst.Try)):  # guarded imports (try: import neuronxcc ...)
            body = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ()
            out.extend(_imports(list(body)))
    return out


def detect(module: cst.Module) -> DialectInfo:
    """Aliases from the module's imports, and the dialect they imply."""
    aliases: dict[str, str] = {}
    beta = standalone = False
    for imp in _imports(list(module.body)):
        if isinstance(imp, cst.Import):
            for alias in imp.names:
                full = dotted(alias.name)
                beta |= full.startswith("neuronxcc")
                standalone |= full == "nki" or full.startswith("nki.")
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    aliases[alias.asname.name.value] = canonical_module(full)
                else:
                    top = full.split(".")[0]
                    aliases[top] = canonical_module(top)
        else:
            mod = dotted(imp.module) if imp.module is not None else ""
            beta |= mod.startswith("neuronxcc")
            standalone |= mod == "nki" or mod.startswith("nki.")
            if isinstance(imp.names, cst.ImportStar):
                continue
            for alias in imp.names:
                name = dotted(alias.name)
                local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
                aliases[local] = canonical_module(f"{mod}.{name}")
    if standalone:
        # a standalone kernel that also uses neuronxcc.nki pieces (nki-library's router top-k annotates with
        # neuronxcc.nki.typing): legal through nki 0.3, and the simulator runs it as standalone (evidence.nki.dialect)
        return DialectInfo(STANDALONE, "imports", aliases)
    if beta:
        return DialectInfo(BETA, "imports", aliases)
    # No NKI import at all (a fragment): the usual short names, judged as the project's target dialect.
    for short in ("nl", "nisa", "nt", "ncc", "np", "math"):
        aliases.setdefault(short, short)
    aliases.setdefault("nki", "nki")
    return DialectInfo(BETA, "default", aliases)
