"""Compiled bytecode for children: a private `PYTHONPYCACHEPREFIX` tree, written once by a trusted warm-up.

A child cannot write bytecode (its filesystem is read-only and it runs with `-B`), so it reads the
`.pyc` files that already exist. Where the grader's environment has `PYTHONDONTWRITEBYTECODE` set, or
the `evidence` package lives in a checkout nothing compiled, none exist for the simulator, and every
child compiled its ~65 modules (500 KiB of source) again: 0.2 s of CPU in a child of about 0.8 s, ten
children per evaluation.

So before the first child, a trusted subprocess (our own code only, no submission) imports what a child
imports, with `PYTHONPYCACHEPREFIX` pointing at a folder only this user can write; children get the
same variable and the folder read-only. With a prefix set, Python reads every module's bytecode from
that tree (not from `__pycache__`), so the warm-up covers the standard library and numpy too. A module
the warm-up missed is compiled in the child as before; stale files are never used (Python checks the
source's size and modification time). When the folder cannot be made safely (not ours, writable by
others, a symlink), children run without it, as before.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

# What a child imports before and while running submitted code (evidence.sandbox.child, the runner, the
# simulator's shims, the error model's references, the cost model's trace-only run).
_WARM = """
import importlib, pkgutil
for name in ("faulthandler", "json", "traceback", "evidence.sandbox.child", "evidence.sandbox.rlimits",
             "evidence.sandbox.standins", "evidence.sandbox.monitor", "evidence.nki.runner", "evidence.perf.analysis",
             "evidence.numerics.conditioning"):
    importlib.import_module(name)
import evidence.nki
for info in pkgutil.walk_packages(evidence.nki.__path__, "evidence.nki."):
    try:
        importlib.import_module(info.name)
    except Exception:
        pass  # a module a child would not import either
"""
WARM_TIMEOUT_S = 120.0


def _safe_folder(path: Path) -> bool:
    """A real folder owned by this user that nobody else can write (children trust what is in it)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def _folder() -> Path | None:
    tag = f"{sys.implementation.cache_tag}-{os.getuid()}"
    path = Path(tempfile.gettempdir()) / f"nki-grader-pyc-{tag}"
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    return path if _safe_folder(path) else None


@lru_cache(maxsize=1)
def child_pycache(package_home: str) -> str | None:
    """The bytecode folder children read (warmed once per process), or None when there is none."""
    folder = _folder()
    if folder is None:
        return None
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": package_home, "PYTHONPYCACHEPREFIX": str(folder),
           "PYTHONHASHSEED": "0", "HOME": str(folder)}
    try:
        subprocess.run([sys.executable, "-s", "-c", _WARM], env=env, cwd=str(folder), timeout=WARM_TIMEOUT_S,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    except (OSError, subprocess.SubprocessError):
        return None  # children compile their modules themselves, as without the cache
    return str(folder)
