"""Which NKI dialect a kernel file is written in, from its imports (REFERENCE §0).

`neuronxcc.nki` is the beta dialect; `nki` (and `nki.language`, `nki.isa`, ...) the standalone
nki 0.3+ dialect, whose `nisa` calls take their destination first and return nothing. A file that
imports both mixes dialects in one kernel, which NKI 0.4+ rejects at compile time. A file with no
NKI import (a helper module) takes the dialect of the kernel that imports it.
"""

from __future__ import annotations

import ast

from evidence.nki.errors import KernelLoadError

BETA = "beta"
STANDALONE = "standalone"
# nisa calls that return a value in the standalone dialect too
_RETURNING = {"register_alloc", "get_nc_version", "engine", "reduce_cmd", "dge_mode", "oob_mode", "matmul_perf_mode",
              "nc_version", "dma_engine", "NkiValidationError", "VirtualRegister"}


def _kind(module: str) -> str | None:
    if module == "neuronxcc" or module.startswith("neuronxcc."):
        return BETA
    if module == "nki" or module.startswith("nki."):
        return STANDALONE
    return None


def imports(tree: ast.AST) -> dict[str, int]:
    """Dialect -> line of its first import in the file."""
    first: dict[str, int] = {}
    for node in ast.walk(tree):
        mods = []
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            mods = [node.module or ""]
        for m in mods:
            kind = _kind(m)
            if kind is not None and (kind not in first or node.lineno < first[kind]):
                first[kind] = node.lineno
    return first


def _isa_names(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == "nki.isa" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "nki":
            names |= {a.asname or a.name for a in node.names if a.name == "isa"}
    return names


def check_dst_first(tree: ast.AST, display: str) -> None:
    """In the standalone dialect `nisa.<op>(dst, ...)` returns nothing: using its value is a beta-style
    call (`t = nisa.exp(x)`), reported at its line rather than as a confusing failure later."""
    isa = _isa_names(tree)
    if not isa:
        return
    statements = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                and node.func.value.id in isa and node.func.attr not in _RETURNING
                and not node.func.attr.startswith("get_")  # target queries return values (get_nc_sub_version)
                and id(node) not in statements):
            raise KernelLoadError(
                "err_dst_first_result_used",
                f"nisa.{node.func.attr}(...) returns nothing in the standalone nki dialect (nki 0.3+): pass the "
                "destination tile as its first argument (dst) instead of using the call's value", display, node.lineno)


# The first Neuron SDK whose nki (0.4) rejects `neuronxcc.nki` inside a kernel (REFERENCE §0: 0.3 ships in 2.29,
# 0.4 in 2.30); before it a standalone kernel may still use neuronxcc.nki pieces (nki-library's router top-k
# annotates its outputs with `neuronxcc.nki.typing`).
MIXING_REJECTED_SDK = (2, 30)


def mixing_allowed(neuron_sdk: str | None) -> bool:
    """Whether the task's Neuron SDK (`task.neuron_sdk`, "2.29"; None when unstated) still lets one kernel use
    both dialects. Unstated: no, as the current SDKs judge it."""
    parts = str(neuron_sdk or "").strip().split(".")
    try:
        version = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        return False
    return version < MIXING_REJECTED_SDK


def mixing_note(found: dict[str, int], neuron_sdk: str | None) -> str:
    return (f"the file imports both neuronxcc.nki (beta, line {found[BETA]}) and nki (standalone, line "
            f"{found[STANDALONE]}): legal for the task's Neuron SDK {neuron_sdk} (nki 0.3 and earlier), which runs it "
            "as a standalone kernel, but a compile error from SDK 2.30 (nki 0.4 rejects neuronxcc.nki inside a kernel); "
            "replace the neuronxcc.nki imports with their nki equivalents")


def detect(tree: ast.AST, display: str, neuron_sdk: str | None = None) -> str | None:
    """The file's dialect (None: no NKI import). Mixing both is the NKI 0.4+ compile error unless the task's
    SDK predates 2.30 (`mixing_allowed`): the file is then a standalone kernel whose neuronxcc.nki imports resolve
    to the beta shim (`loader.load_kernel` records the note a finding reports)."""
    found = imports(tree)
    if len(found) > 1:
        if not mixing_allowed(neuron_sdk):
            sdk = f" (the task's Neuron SDK: {neuron_sdk})" if neuron_sdk else ""
            raise KernelLoadError(
                "err_mixed_nki_dialects",
                f"the file imports both neuronxcc.nki (beta, line {found[BETA]}) and nki (standalone nki 0.3+, line "
                f"{found[STANDALONE]}); NKI 0.4+ (Neuron SDK 2.30+) rejects mixing the dialects in one kernel{sdk}",
                display, max(found.values()))
        dialect = STANDALONE
    else:
        dialect = next(iter(found), None)
    if dialect == STANDALONE:
        check_dst_first(tree, display)
    return dialect
