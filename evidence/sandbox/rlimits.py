"""Resource limits a child sets on itself before any submitted code runs.

Set from inside the child (not with a preexec hook in the grader, which is unsafe in a threaded
process): address space, CPU seconds (SIGXCPU, then SIGKILL 5 s later), the size of any file it
writes, open files, processes (per user namespace, so only the sandbox's own processes count) and
no core files. Soft and hard limits are equal, so submitted code cannot raise them again.
"""

from __future__ import annotations

import resource

from evidence.sandbox.config import Limits


def _set(which: int, soft: int, hard: int | None = None) -> None:
    hard = soft if hard is None else hard
    _, current_hard = resource.getrlimit(which)
    if current_hard != resource.RLIM_INFINITY:
        soft, hard = min(soft, current_hard), min(hard, current_hard)
    resource.setrlimit(which, (soft, hard))


def apply(limits: Limits) -> None:
    _set(resource.RLIMIT_AS, limits.memory_bytes)
    _set(resource.RLIMIT_CPU, limits.cpu_s, limits.cpu_s + 5)
    _set(resource.RLIMIT_FSIZE, limits.file_bytes)
    _set(resource.RLIMIT_NOFILE, limits.open_files)
    _set(resource.RLIMIT_NPROC, limits.processes)
    _set(resource.RLIMIT_CORE, 0)
