"""Loading kernel source with the NKI import names mapped onto the simulator's shim.

`shim_imports(dialect, modules)` puts one dialect's shim modules into `sys.modules` (beta:
`neuronxcc`, `neuronxcc.nki[.language|.isa|.typing|.compiler]`; standalone nki 0.3+: `nki`,
`nki.language`, `nki.isa`, `nki.isa.constants`, `nki.typing`, `nki.compiler`, `nki.tensor`), plus a submission's own modules, and
restores every entry it touched on exit; nested uses stack. It is active while a kernel module
executes and while `simulate` runs a kernel, so imports inside kernel bodies resolve too; nothing
leaks. The dialect is detected per file from its imports (evidence.nki.dialect).

Multi-file submissions: a kernel file may import helper modules from its folder (`import helpers`,
`from tiles.plan import x`, or relative `from .helpers import y`). They load like the kernel file:
their NKI imports resolve to the same dialect's shim and their lines are kernel lines.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.util
import itertools
import linecache
import os
import sys
import types
from contextlib import contextmanager
from pathlib import Path

from evidence.nki import dialect as _dialect
from evidence.nki import import_failure as _import_failure
from evidence.nki import state as _state
from evidence.nki.errors import EvidenceError, KernelLoadError

LOADED_FILES: dict[str, str] = {}  # code filename -> display name, for kernel line attribution
_counter = itertools.count(1)
_MISSING = object()


def _shim_table(dialect: str) -> dict[str, types.ModuleType]:
    # imported here: the shim's top modules call back into `simulate`, which imports this module
    from evidence.nki.shim import compiler, typing

    if dialect == _dialect.STANDALONE:
        from evidence.nki.shim import internal
        from evidence.nki.shim.standalone import isa, isa_constants, language, nki, tensor

        return {"nki": nki, "nki.language": language, "nki.isa": isa, "nki.isa.constants": isa_constants,
                "nki.typing": typing, "nki.compiler": compiler, "nki.tensor": tensor, **internal.standalone_modules()}
    from evidence.nki.shim import internal, isa, language, nki

    root = types.ModuleType("neuronxcc")
    root.__doc__ = "NKI simulator stand-in for neuronx-cc (evidence.nki)"
    root.nki = nki
    table = {"neuronxcc": root}
    for suffix, module in (("", nki), (".language", language), (".isa", isa), (".typing", typing),
                           (".compiler", compiler)):
        table["neuronxcc.nki" + suffix] = module
    table.update(internal.beta_modules())
    return table


@contextmanager
def shim_imports(dialect: str = _dialect.BETA, modules: dict[str, types.ModuleType] | None = None,
                 both: bool = False):
    """`both`: the task's Neuron SDK predates 2.30, where both packages ship and a standalone kernel may use
    neuronxcc.nki pieces (evidence.nki.dialect.mixing_allowed): the other dialect's names resolve too."""
    table = {}
    if both:
        table.update(_shim_table(_dialect.BETA if dialect == _dialect.STANDALONE else _dialect.STANDALONE))
    table.update(_shim_table(dialect))
    table.update(modules or {})
    saved = {name: sys.modules.get(name, _MISSING) for name in table}
    sys.modules.update(table)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is _MISSING:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old


# --- submission modules ------------------------------------------------------------------------

class _SubmissionModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the submission's own modules (siblings of the kernel file under `root`), by
    absolute name or under the synthetic package the kernel file is a member of (relative imports)."""

    def __init__(self, root: Path, package: str, dialect: str | None, home: Path | None = None,
                 neuron_sdk: str | None = None) -> None:
        self.root, self.package, self.dialect = root, package, dialect
        self.neuron_sdk = neuron_sdk
        self.mixed: list[tuple[str, int, str]] = []  # (file, line, note) of dialect mixing the task's SDK allows
        self.home = home or root  # the kernel file's folder: absolute imports look there first
        self.loaded: dict[str, types.ModuleType] = {}

    def _path(self, fullname: str) -> Path | None:
        relative = fullname.startswith(self.package + ".")
        if relative:  # relative imports resolve under the package (root)
            bases = [self.root.joinpath(*fullname[len(self.package) + 1:].split("."))]
        else:
            bases = [folder.joinpath(*fullname.split(".")) for folder in dict.fromkeys((self.home, self.root))]
        for base in bases:
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file() and self.root in candidate.resolve().parents:
                    return candidate
            # a folder without __init__.py reached by a relative import: a namespace package (nkilib-style trees)
            if relative and base.is_dir() and self.root in base.resolve().parents:
                return base
        return None

    def find_spec(self, fullname, path=None, target=None):
        found = self._path(fullname)
        if found is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=str(found),
                                               is_package=found.name == "__init__.py" or found.is_dir())

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        path = Path(module.__spec__.origin)
        if path.is_dir():
            module.__path__ = [str(path)]
            self.loaded[module.__name__] = module
            return
        display = path.resolve().relative_to(self.root.resolve()).as_posix()
        source = _read(path, display)
        tree = _parse(source, str(path.resolve()), display)
        found = _dialect.detect(tree, display, self.neuron_sdk)
        both = _dialect.imports(tree)
        if len(both) > 1:
            self.mixed.append((display, max(both.values()), _dialect.mixing_note(both, self.neuron_sdk)))
        elif found is not None and self.dialect is not None and found != self.dialect:
            if not _dialect.mixing_allowed(self.neuron_sdk):
                raise KernelLoadError("err_mixed_nki_dialects", f"{display} is written in the {found} NKI dialect, "
                                      f"the kernel in the {self.dialect} one; NKI 0.4+ (Neuron SDK 2.30+) rejects "
                                      "mixing them", display, 1)
            self.mixed.append((display, both[found], f"{display} is written in the {found} NKI dialect, the kernel in "
                               f"the {self.dialect} one: legal for the task's Neuron SDK {self.neuron_sdk} (nki 0.3 and "
                               "earlier), a compile error from SDK 2.30 (nki 0.4 rejects neuronxcc.nki inside a "
                               "kernel)"))
        if module.__spec__.submodule_search_locations is not None:
            module.__path__ = [str(path.parent)]
        _execute(module, tree, source, str(path.resolve()), display)
        self.loaded[module.__name__] = module


def _imported_dialect(tree: ast.Module, finder: _SubmissionModules, package: str, depth: int = 3) -> str | None:
    """The NKI dialect of the first submission module `tree` imports (following imports `depth` deep) that
    names one, or None."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            try:
                base = importlib.util.resolve_name("." * node.level + (node.module or ""), package) \
                    if node.level else (node.module or "")
            except (ImportError, ValueError):
                continue
            names += [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    for name in names:
        path = finder._path(name)
        if path is None or not path.is_file():
            continue
        try:
            sub = ast.parse(path.read_text())
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        found = next(iter(_dialect.imports(sub)), None)
        if found is None and depth > 1:
            pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
            found = _imported_dialect(sub, finder, pkg, depth - 1)
        if found is not None:
            return found
    return None


def _read(path: Path, display: str) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelLoadError("import_error", f"cannot read {display}: {exc}", display, 1) from exc


def _parse(source: str, filename: str, display: str) -> ast.Module:
    try:
        return ast.parse(source, filename)
    except SyntaxError as exc:
        raise KernelLoadError("syntax_error", exc.msg or "invalid syntax", display, exc.lineno or 1) from exc


def _execute(module: types.ModuleType, tree: ast.Module, source: str, filename: str, display: str) -> None:
    if not os.path.exists(filename):
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    LOADED_FILES[filename] = display
    module.__file__ = filename
    module.__nki_display__ = display
    code = compile(tree, filename, "exec")
    try:
        exec(code, module.__dict__)
    except EvidenceError as exc:  # e.g. a removed nki.jit argument, a helper module's load error
        if not exc.file:
            exc.file, exc.line = display, innermost_line(exc, filename)
        raise
    except Exception as exc:
        line = innermost_line(exc, filename)
        kind = "import_error" if isinstance(exc, ImportError) else "python_error"
        raise KernelLoadError(kind, _import_message(exc), display, line) from exc


def _import_message(exc: Exception) -> str:
    """The error as the kernel's author reads it. A name missing from one of the simulator's NKI stand-in modules
    is named under the module the kernel imported (`neuronxcc.nki`, `nki.language`, ...), not the stand-in's own
    module and file, and the message says what it can mean."""
    shim = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    missing = getattr(exc, "msg", "")
    absent = _import_failure.limit_message(exc) if isinstance(exc, ImportError) else None
    if absent is not None:
        return absent
    if not (shim and shim.startswith("evidence.nki.shim") and missing.startswith("cannot import name ")):
        return f"{type(exc).__name__}: {exc}"
    alias = next((n for n, m in sys.modules.items() if getattr(m, "__name__", None) == shim and n != shim), shim)
    what = missing[len("cannot import name "):].split(" ")[0]
    return (f"ImportError: cannot import name {what} from '{alias}': the simulator's '{alias}' has no such name "
            "(an API it lacks, or a name no documented NKI release has)")


# --- loading -----------------------------------------------------------------------------------

def _is_path(x) -> bool:
    if isinstance(x, Path):
        return True
    return isinstance(x, str) and "\n" not in x and len(x) < 4096 and x.endswith(".py") and os.path.exists(x)


def load_kernel(path_or_source, *, filename: str | None = None, display: str | None = None,
                root: str | Path | None = None, target: str = "trn2", neuron_sdk: str | None = None) -> types.ModuleType:
    """Execute an NKI kernel file (or source text) as a fresh module whose NKI imports hit the shim.

    `display` is the name used in errors and findings (e.g. the submission-relative path). `root`
    is the folder the kernel may import its own modules from (default: a file's folder). `target`
    is what module-level code sees in `nl.tile_size` (helper configs read it at import time). `neuron_sdk` is
    the task's Neuron SDK ("2.29"; None when unstated): before 2.30 a kernel may mix the dialects (it runs as a
    standalone kernel, `__nki_mixed__` holding where, for the simulation's finding), from 2.30 or unstated that
    is `err_mixed_nki_dialects`.
    Raises KernelLoadError (syntax error, failing import, mixed dialects, ...).
    """
    if _is_path(path_or_source):
        path = Path(path_or_source)
        filename = filename or str(path.resolve())
        display = display or path.name
        source = _read(path, display)
        root = Path(root) if root is not None else path.resolve().parent
    else:
        source = str(path_or_source)
        filename = filename or f"<nki-kernel-{next(_counter)}>"
        display = display or filename
    tree = _parse(source, filename, display)
    dialect = _dialect.detect(tree, display, neuron_sdk)
    module = types.ModuleType(f"nki_kernel_{next(_counter)}")
    module.__nki_dialect__ = dialect or _dialect.BETA
    module.__nki_neuron_sdk__ = neuron_sdk
    found = _dialect.imports(tree)
    mixed = [(display, max(found.values()), _dialect.mixing_note(found, neuron_sdk))] if len(found) > 1 else []
    both = _dialect.mixing_allowed(neuron_sdk)
    modules: dict[str, types.ModuleType] = {}
    finder = None
    if root is not None:
        package = types.ModuleType(f"nki_submission_{next(_counter)}")
        package.__path__ = [str(Path(root).resolve())]
        module.__package__ = package.__name__ + _subpackage(path_or_source, Path(root))
        modules[package.__name__] = package
        home = Path(path_or_source).resolve().parent if _is_path(path_or_source) else None
        finder = _SubmissionModules(Path(root).resolve(), package.__name__, dialect, home, neuron_sdk)
        if dialect is None:  # a wrapper importing no NKI itself runs in the dialect of the modules it imports
            dialect = _imported_dialect(tree, finder, module.__package__)
            if dialect is not None:
                module.__nki_dialect__ = finder.dialect = dialect
    prev_target = _state.set_loading_target(target)
    # the module is registered while it executes (dataclasses and typing look it up), removed afterwards
    with shim_imports(module.__nki_dialect__, {**modules, module.__name__: module}, both):
        if finder is not None:
            sys.meta_path.insert(0, finder)
        try:
            _execute(module, tree, source, filename, display)
        except KernelLoadError as exc:
            _blame_submission(exc, finder)
            raise
        finally:
            _state.set_loading_target(prev_target)
            if finder is not None:
                sys.meta_path.remove(finder)
                for name in finder.loaded:
                    sys.modules.pop(name, None)
    if finder is not None:
        modules.update(finder.loaded)
        mixed += finder.mixed
    module.__nki_mixed__ = mixed
    module.__nki_modules__ = modules  # put back in sys.modules while the kernel runs (imports in its body)
    return module


def _blame_submission(exc: KernelLoadError, finder: _SubmissionModules | None) -> None:
    """An import of the submission's own namespace that fails is the kernel's defect, not the sandbox's
    missing package (evidence.nki.import_failure): recode `exc` in place."""
    cause = exc.__cause__
    if exc.code != "import_error" or not isinstance(cause, ImportError) or finder is None:
        return
    found = _import_failure.classify(cause, finder.root, finder.package, set(finder.loaded))
    if found is not None:
        exc.code, exc.message = found
        exc.args = (str(exc),)


def _subpackage(path_or_source, root: Path) -> str:
    """'.a.b' for a kernel file in root/a/b/, so `from ..utils import x` in it resolves under root."""
    if not _is_path(path_or_source):
        return ""
    try:
        parts = Path(path_or_source).resolve().parent.relative_to(root.resolve()).parts
    except ValueError:
        return ""
    return "".join("." + part for part in parts) if all(part.isidentifier() for part in parts) else ""


def innermost_line(exc: BaseException, filename: str) -> int:
    """The line of the innermost traceback frame inside `filename` (0 when none is)."""
    line = 0
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
