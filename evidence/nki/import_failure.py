"""Whose fault a failing import is: the submission's (a module of its own it does not include) or the grader's.

A submission's own namespace is what `load_kernel`'s finder serves: relative imports (under the synthetic
package) and absolute names whose top level is a module or folder of the submission. An import failing there is
the kernel's defect (`submission_import_error`, reported as `sim.error`): the submission does not include what it
imports. Anything else that is missing is a package the grader's sandbox does not install; its import stays
`import_error`, the simulator's limit (`sim.incomplete`).

The rule for a name that matches neither an installed package nor any file of the submission
(`import my_tile_utils` with no such file, `import some_vendor_pkg`): the two cannot be told apart from the
source, so it stays our limit. Only the submission's own namespace (relative import, or a top-level name the
submission has as a file or folder, anywhere in its tree) makes it the kernel's defect; a false defect would be
evidence against a kernel that may be right, an unobserved criterion only costs a reviewer's look.
"""

from __future__ import annotations

import os
from pathlib import Path

SUBMISSION_IMPORT_ERROR = "submission_import_error"
_NKI_ROOTS = frozenset({"neuronxcc", "nki"})  # names the shim serves: a missing one is the shim's gap
_MAX_ENTRIES = 5000  # a submission is small; an in-process root may be any folder


def own_names(root: Path) -> dict[str, str]:
    """Top-level module names the submission has anywhere in its tree -> the first path (posix, relative)."""
    names: dict[str, str] = {}
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d.isidentifier() and d != "__pycache__")
        rel = Path(folder).relative_to(root)
        for name in [*dirs, *sorted(files)]:
            seen += 1
            if seen > _MAX_ENTRIES:
                return names
            stem = name[:-3] if name.endswith(".py") else name if name in dirs else None
            if stem and stem.isidentifier():
                names.setdefault(stem, (rel / name).as_posix())
    return names


def classify(exc: ImportError, root: Path | None, package: str | None, loaded: set[str]) -> tuple[str, str] | None:
    """(code, one-line message) when `exc` is the submission's own import failing, else None (our limit).

    `package`: the synthetic package relative imports resolve under; `loaded`: submission modules loaded so far."""
    if root is None or package is None:
        return None
    name = getattr(exc, "name", None) or ""
    if isinstance(exc, ModuleNotFoundError):
        if name == package or name.startswith(package + "."):
            shown = "." + name[len(package) + 1:]
            return SUBMISSION_IMPORT_ERROR, (f"imports module {shown} (a relative import), which the submission "
                                             "does not include")
        top = name.split(".")[0]
        if not top or top in _NKI_ROOTS:
            return None
        if top in {n.split(".")[0] for n in loaded}:
            return SUBMISSION_IMPORT_ERROR, (f"imports module {name}, which the submission does not include (its "
                                             f"{top} has no {name[len(top) + 1:] or top})")
        where = own_names(root).get(top)
        if where is not None:
            return SUBMISSION_IMPORT_ERROR, (f"imports module {name}, which the submission does not include where "
                                             f"the import looks (it has {where}, not importable as {name})")
        return None
    if "relative import beyond top-level package" in str(exc):
        return SUBMISSION_IMPORT_ERROR, "a relative import reaches above the submission's folder, outside what it includes"
    if name == package:  # `from . import helpers` with no helpers module
        what = getattr(exc, "msg", str(exc)).split("'")
        shown = "." + (what[1] if len(what) >= 3 else "")
        return SUBMISSION_IMPORT_ERROR, f"imports module {shown} (a relative import), which the submission does not include"
    relative = name.startswith(package + ".")
    if name and (relative or name in loaded or name.split(".")[0] in own_names(root)) \
            and name.split(".")[0] not in _NKI_ROOTS:  # `from helpers import missing_name`
        shown = "." + name[len(package) + 1:] if relative else name
        missing = getattr(exc, "msg", str(exc)).split("'")
        what = missing[1] if len(missing) >= 3 else "a name"
        if "partially initialized" in str(exc):
            return SUBMISSION_IMPORT_ERROR, (f"imports {what} from the submission's module {shown} while that module "
                                             "is still loading (a circular import among the submission's modules)")
        return SUBMISSION_IMPORT_ERROR, f"imports {what} from the submission's module {shown}, which does not define it"
    return None


def limit_message(exc: ImportError) -> str | None:
    """The one-line message for a package the sandbox lacks (None when `exc` is not a missing module)."""
    if not isinstance(exc, ModuleNotFoundError) or not getattr(exc, "name", None):
        return None
    top = exc.name.split(".")[0]
    if top in _NKI_ROOTS:
        return None
    return (f"ModuleNotFoundError: imports {exc.name}, a package the grader's sandbox does not install (and no file "
            "or folder of the submission)")


def in_run(exc: ImportError, kernel_globals: dict) -> tuple[str, str] | None:
    """(code, one-line message) for an import inside a kernel's body failing while it runs: the submission's defect
    as at load time, `import_error` (our limit) for a package the sandbox lacks, None for anything else (the
    kernel's own `python_error`)."""
    package = (kernel_globals.get("__package__") or "").split(".")[0]
    modules = kernel_globals.get("__nki_modules__") or {}
    root = getattr(modules.get(package), "__path__", None)
    if root:
        found = classify(exc, Path(root[0]), package, set(modules) - {package})
        if found is not None:
            return found
    absent = limit_message(exc)
    return ("import_error", absent) if absent is not None else None
