"""Loading kernel source with the NKI import names mapped onto the simulator's shim.

`shim_imports()` is a re-entrant context manager that puts the shim modules into `sys.modules`
under `neuronxcc`, `neuronxcc.nki[.language|.isa|.typing|.compiler]` and the `nki.*` aliases,
and restores every entry it touched on exit. It is active while a kernel module executes and
while `simulate` runs a kernel, so imports inside kernel bodies resolve too; nothing leaks.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import os
import sys
import types
from contextlib import contextmanager
from pathlib import Path

from evidence.nki.errors import KernelLoadError, UnsupportedDialectError

LOADED_FILES: dict[str, str] = {}  # code filename -> display name, for kernel line attribution
_counter = itertools.count(1)
_depth = 0
_saved: dict[str, object] = {}
_MISSING = object()


def _shim_table() -> dict[str, types.ModuleType]:
    from evidence.nki.shim import compiler, isa, language, nki, typing

    root = types.ModuleType("neuronxcc")
    root.__doc__ = "NKI simulator stand-in for neuronx-cc (evidence.nki)"
    root.nki = nki
    table = {"neuronxcc": root}
    for prefix in ("neuronxcc.nki", "nki"):
        table[prefix] = nki
        table[prefix + ".language"] = language
        table[prefix + ".isa"] = isa
        table[prefix + ".typing"] = typing
        table[prefix + ".compiler"] = compiler
    return table


@contextmanager
def shim_imports():
    global _depth
    if _depth == 0:
        table = _shim_table()
        _saved.clear()
        for name, module in table.items():
            _saved[name] = sys.modules.get(name, _MISSING)
            sys.modules[name] = module
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            for name, old in _saved.items():
                if old is _MISSING:
                    sys.modules.pop(name, None)
                else:
                    sys.modules[name] = old
            _saved.clear()


# --- dialect detection -------------------------------------------------------------------------

_COMPUTE = {"activation", "tensor_tensor", "tensor_scalar", "tensor_copy", "memset", "iota", "nc_matmul",
            "nc_transpose", "tensor_reduce", "reciprocal", "exponential", "tensor_tensor_scan", "affine_select",
            "scalar_tensor_tensor", "bn_stats", "bn_aggr"}
_BETA_DST_KW = {"dma_copy", "tensor_copy_dynamic_dst", "tensor_copy_predicated", "nc_stream_shuffle", "dma_compute",
                "select_reduce"}
_NEW_ONLY = {"register_alloc", "register_load", "register_store", "register_move", "fori_loop", "while_loop",
             "dynamic_range", "dma_compute", "nonzero_with_count", "core_barrier", "sendrecv"}


def _isa_aliases(tree: ast.AST) -> tuple[set[str], set[str]]:
    isa, lang = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.endswith("nki.isa") and a.asname:
                    isa.add(a.asname)
                if a.name.endswith("nki.language") and a.asname:
                    lang.add(a.asname)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("nki"):
            for a in node.names:
                if a.name == "isa":
                    isa.add(a.asname or a.name)
                if a.name == "language":
                    lang.add(a.asname or a.name)
    return isa, lang


def detect_dialect(tree: ast.AST) -> tuple[int, str] | None:
    """(line, reason) of the first construct only the standalone nki 0.3+ dialect has, else None."""
    isa, lang = _isa_aliases(tree)
    hits: list[tuple[int, str]] = []
    discarded = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        f = node.func
        base = f.value.id if isinstance(f.value, ast.Name) else None
        if f.attr == "ap" and base is None:
            hits.append((node.lineno, "access patterns (.ap) are an nki 0.3+ feature"))
        if base in lang and f.attr in _NEW_ONLY:
            hits.append((node.lineno, f"nl.{f.attr} exists only in nki 0.3+"))
        if base not in isa:
            continue
        kws = {k.arg for k in node.keywords}
        if f.attr in _NEW_ONLY:
            hits.append((node.lineno, f"nisa.{f.attr} exists only in nki 0.3+"))
        elif "dst" in kws and f.attr not in _BETA_DST_KW:
            hits.append((node.lineno, f"nisa.{f.attr}(dst=...) is the dst-first nki 0.3+ form"))
        elif f.attr == "dma_copy" and node.args:
            hits.append((node.lineno, "nisa.dma_copy with positional dst/src is the nki 0.3+ form"))
        elif f.attr == "nc_matmul" and len(node.args) >= 3:
            hits.append((node.lineno, "nisa.nc_matmul(dst, stationary, moving) is the nki 0.3+ form"))
        elif f.attr in _COMPUTE and id(node) in discarded and "reduce_res" not in kws:
            hits.append((node.lineno, f"nisa.{f.attr}(...) used as a statement: in nki 0.3+ it writes dst"))
    return min(hits) if hits else None


# --- loading -----------------------------------------------------------------------------------

def _is_path(x) -> bool:
    if isinstance(x, Path):
        return True
    return isinstance(x, str) and "\n" not in x and len(x) < 4096 and x.endswith(".py") and os.path.exists(x)


def load_kernel(path_or_source, *, filename: str | None = None, display: str | None = None) -> types.ModuleType:
    """Execute an NKI kernel file (or source text) as a fresh module whose NKI imports hit the shim.

    `display` is the name used in errors and findings (e.g. the submission-relative path).
    Raises KernelLoadError (syntax error, failing import) or UnsupportedDialectError.
    """
    if _is_path(path_or_source):
        path = Path(path_or_source)
        source = path.read_text()
        filename = filename or str(path.resolve())
        display = display or path.name
    else:
        source = str(path_or_source)
        filename = filename or f"<nki-kernel-{next(_counter)}>"
        display = display or filename
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as exc:
        raise KernelLoadError("syntax_error", exc.msg or "invalid syntax", display, exc.lineno or 1) from exc
    found = detect_dialect(tree)
    if found:
        line, reason = found
        raise UnsupportedDialectError(
            "unsupported_dialect",
            f"standalone nki 0.3+ (dst-first) dialect detected: {reason}; the simulator targets the beta "
            "neuronxcc.nki dialect",
            display, line,
        )
    if not os.path.exists(filename):
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    LOADED_FILES[filename] = display
    module = types.ModuleType(f"nki_kernel_{next(_counter)}")
    module.__file__ = filename
    module.__nki_display__ = display
    code = compile(tree, filename, "exec")
    with shim_imports():
        # registered while it executes (dataclasses and typing look the module up), removed afterwards
        sys.modules[module.__name__] = module
        try:
            exec(code, module.__dict__)
        except Exception as exc:
            line = innermost_line(exc, filename)
            kind = "import_error" if isinstance(exc, ImportError) else "python_error"
            raise KernelLoadError(kind, f"{type(exc).__name__}: {exc}", display, line) from exc
        finally:
            sys.modules.pop(module.__name__, None)
    return module


def innermost_line(exc: BaseException, filename: str) -> int:
    """The line of the innermost traceback frame inside `filename` (0 when none is)."""
    line = 0
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
