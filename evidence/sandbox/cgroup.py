"""Per-job pids cgroups: the process bound when the grader runs as root.

The kernel never enforces RLIMIT_NPROC for root, and a child whose uid inside a user namespace
maps to root outside is still root to that check, so a fork bomb from a grader running as root
would be unbounded. Each sandboxed child of such a grader therefore runs in its own pids cgroup
with `pids.max`: cgroup v1 (a `pids` hierarchy) or v2 (a cgroup whose `cgroup.subtree_control`
enables `pids`). A grader running as an ordinary user needs none: RLIMIT_NPROC binds it.
"""

from __future__ import annotations

import itertools
import os
import signal
import time
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count(1)


def _own_paths() -> tuple[str | None, str | None]:
    """(v1 pids path, v2 path) of this process's cgroups, from /proc/self/cgroup."""
    v1 = v2 = None
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None, None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            v1 = path
        elif controllers == "":
            v2 = path
    return v1, v2


def _usable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK) and (folder / "cgroup.procs").exists()


def pids_parent(configured: str | None = None) -> Path | None:
    """The cgroup under which per-job pids cgroups can be made, or None when there is none."""
    if configured:
        folder = Path(configured)
        return folder if _usable(folder) else None
    v1, v2 = _own_paths()
    if v1 is not None and _usable(_ROOT / "pids" / v1.lstrip("/")):
        return _ROOT / "pids" / v1.lstrip("/")
    if v2 is not None:
        folder = _ROOT / v2.lstrip("/")
        try:
            delegated = "pids" in (folder / "cgroup.subtree_control").read_text().split()
        except OSError:
            delegated = False
        if delegated and _usable(folder):
            return folder
    return None


class JobCgroup:
    """A pids cgroup for one child: processes join it through `procs_file`; `close` kills and removes it."""

    def __init__(self, parent: Path, max_pids: int) -> None:
        self.path = parent / f"nki-sandbox-{os.getpid()}-{next(_counter)}"
        self.path.mkdir()
        (self.path / "pids.max").write_text(str(max_pids))
        self.procs_file = self.path / "cgroup.procs"

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in self.procs_file.read_text().split()]
        except OSError:
            return []

    def close(self) -> None:
        """SIGKILL whatever is left in the cgroup, then remove it (retrying while the kernel reaps)."""
        for _ in range(200):
            left = self.pids()
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.005)
        raise RuntimeError(f"cgroup {self.path} still holds processes {self.pids()}")
