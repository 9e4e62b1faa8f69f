"""How submitted code is run: the sandbox mode and the limits of one sandboxed child.

The grader builds a `SandboxConfig` from its settings and hands it to the collectors that run
submitted code (evidence never reads settings itself, DESIGN §4).
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class SandboxMode(str, Enum):
    bwrap = "bwrap"  # bubblewrap namespaces + rlimits + a pids cgroup when running as root
    off = "off"  # the operator's explicit opt-out: children still get rlimits, a clean env, separate processes


class Limits(BaseModel):
    """Resource limits of one child process (applied by the child before any submitted code runs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_bytes: int = Field(default=6 * 2**30, ge=64 * 2**20)  # RLIMIT_AS
    cpu_s: int = Field(default=300, ge=1)  # RLIMIT_CPU (SIGXCPU, then SIGKILL 5 s later)
    file_bytes: int = Field(default=2**30, ge=2**20)  # RLIMIT_FSIZE: any one file the child writes
    open_files: int = Field(default=64, ge=16)  # RLIMIT_NOFILE
    processes: int = Field(default=32, ge=4)  # RLIMIT_NPROC inside the user namespace / pids.max
    output_bytes: int = Field(default=64 * 1024, ge=1024)  # stdout/stderr kept per stream
    output_limit_bytes: int = Field(default=8 * 2**20, ge=4096)  # stdout+stderr beyond this stop the child
    result_bytes: int = Field(default=2**31, ge=2**20)  # all result files together, checked before parsing


class SandboxConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: SandboxMode = SandboxMode.bwrap
    bwrap: str = "bwrap"  # the bubblewrap executable (a name on PATH or a path)
    # Where per-job pids cgroups are made when the grader runs as root (RLIMIT_NPROC does not bind
    # root); None: the pids controller of the grader's own cgroup, when it is writable.
    pids_cgroup: str | None = None
    uid: int = 65534  # the child's uid and gid inside the user namespace
    gid: int = 65534
    workers: int = Field(default=2, ge=1)  # sandboxed children running at once in this process
    import_policy: bool = True  # static gate + runtime blocking; off: the sandbox alone holds
    limits: Limits = Limits()
