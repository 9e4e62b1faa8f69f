"""Run one child (`python -m evidence.sandbox.child JOB`) sandboxed, with a wall-clock timeout.

At most `config.workers` children run at once in this process. The child's stdout and stderr are
read as they come and capped: the first and last `output_bytes` of each are kept, and a child
writing more than `output_limit_bytes` in all is killed. At the deadline (the child's own timeout
plus a grace period) the whole process group, and the child's pids cgroup when there is one, is
killed with SIGKILL; bubblewrap's PID namespace takes every process of the sandbox with it. The
child arms its own watchdog only when submitted code starts, so the parent allows for start-up.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from evidence.sandbox import bwrap, bytecode
from evidence.sandbox.cgroup import JobCgroup
from evidence.sandbox.config import SandboxConfig, SandboxMode
from evidence.sandbox.bwrap import SandboxStatus

GRACE_S = 2.0  # after the child's own deadline, for its watchdog to report where it was stuck
STARTUP_S = 20.0  # the child's own deadline starts after its interpreter and the simulator are loaded
_slots: dict[int, threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()
_running = {"now": 0, "peak": 0}  # children running in this process, and the most at once (observability)


def _slot(workers: int) -> threading.BoundedSemaphore:
    with _slots_lock:
        return _slots.setdefault(workers, threading.BoundedSemaphore(workers))


def running() -> dict[str, int]:
    """How many sandboxed children run now, and the most that ever ran at once in this process."""
    with _slots_lock:
        return dict(_running)


def _count(delta: int) -> None:
    with _slots_lock:
        _running["now"] += delta
        _running["peak"] = max(_running["peak"], _running["now"])


def child_env(pythonpath: str, job_id: str, pycache: str | None = None) -> dict[str, str]:
    """The whole environment of a child: what Python and numpy need, nothing of the grader's."""
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONPATH": pythonpath,
           "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1", "OPENBLAS_NUM_THREADS": "1",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NKI_SANDBOX_JOB": job_id,
           "PYDANTIC_DISABLE_PLUGINS": "__all__"}  # no entry-point scan of the whole installation per child
    if pycache:
        env["PYTHONPYCACHEPREFIX"] = pycache  # read-only bytecode of the simulator (evidence.sandbox.bytecode)
    return env


@dataclass
class Capture:
    """The head and tail of one output stream, and how many bytes it carried."""

    keep: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.keep - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail = (self.tail + data)[-self.keep:]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {cut} bytes not kept ...]\n" if cut > 0 else ""
        return (bytes(self.head).decode(errors="replace") + middle + bytes(self.tail).decode(errors="replace"))


@dataclass
class ChildRun:
    returncode: int | None
    timed_out: bool
    output_flood: bool
    stdout: Capture
    stderr: Capture
    wall_s: float


def run(job_dir: Path, config: SandboxConfig, status: SandboxStatus, timeout_s: float, job_id: str) -> ChildRun:
    """Run the child for `job_dir` (job.json, src/, out/) and wait for it, bounded in time and output."""
    sandboxed = config.mode is SandboxMode.bwrap
    job_path = bwrap.JOB if sandboxed else str(job_dir)
    argv = [sys.executable, "-s", "-B", "-m", "evidence.sandbox.child", job_path]
    env = child_env(str(bwrap.PACKAGE_HOME), job_id, bytecode.child_pycache(str(bwrap.PACKAGE_HOME)))
    cgroup = None
    with _slot(config.workers):
        if sandboxed:
            assert status.available and status.bwrap, status.detail
            cmd = bwrap.command(status.bwrap, config, job_dir, env, argv)
            env = {"PATH": "/usr/bin:/bin"}
            if status.pids_cgroup:
                cgroup = JobCgroup(Path(status.pids_cgroup), config.limits.processes)
                # join the cgroup before exec, so bubblewrap and everything it starts are in it
                cmd = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cgroup.procs_file), *cmd]
        else:
            cmd = argv
        _count(+1)
        try:
            return _wait(cmd, env, job_dir / "out", config, timeout_s)
        finally:
            _count(-1)
            if cgroup is not None:
                cgroup.close()


def _wait(cmd: list[str], env: dict[str, str], cwd: Path, config: SandboxConfig, timeout_s: float) -> ChildRun:
    limits = config.limits
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, cwd=cwd, start_new_session=True)
    streams = {proc.stdout.fileno(): Capture(limits.output_bytes), proc.stderr.fileno(): Capture(limits.output_bytes)}
    sel = selectors.DefaultSelector()
    for fd in streams:
        sel.register(fd, selectors.EVENT_READ)
    deadline = start + STARTUP_S + timeout_s + GRACE_S
    timed_out = flood = False
    exited_at = None
    try:
        while sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > 1.0:  # something else holds the pipes open
                break
            for key, _ in sel.select(timeout=min(deadline - now, 0.2)):
                data = os.read(key.fd, 1 << 16)
                if not data:
                    sel.unregister(key.fd)
                    continue
                streams[key.fd].add(data)
            if sum(c.total for c in streams.values()) > limits.output_limit_bytes:
                flood = True
                break
    finally:
        sel.close()
        _kill_group(proc)
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    out, err = streams.values()
    return ChildRun(proc.returncode, timed_out, flood, out, err, time.monotonic() - start)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
