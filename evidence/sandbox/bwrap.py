"""The bubblewrap command line, and whether a sandbox can be set up here (`sandbox_status`).

Inside the sandbox: new user, PID, network, IPC, UTS and cgroup namespaces; a root made of
read-only binds of the OS (`/usr` and its links), the Python installation, the `evidence`
package and its compiled bytecode only (no home directory, no checkout, no other users' data); a fresh /proc and /dev, a
private tmpfs /tmp for scratch; the job folder read-only at /job with /job/out the one writable
place; a cleared environment; no further user namespaces; killed with its parent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

import evidence
from evidence.sandbox.cgroup import pids_parent
from evidence.sandbox.config import SandboxConfig, SandboxMode

JOB = "/job"  # where the job folder appears inside the sandbox
PACKAGE_HOME = Path(evidence.__file__).resolve().parent.parent  # the folder holding the `evidence` package
_OS_LINKS = ("bin", "lib", "lib32", "lib64", "libx32", "sbin")
INSTALL_FIX = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
USERNS_FIX = ("allow unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1 (Debian), "
              "sysctl -w user.max_user_namespaces=15000, and on Ubuntu 23.10+ "
              "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0")
CGROUP_FIX = ("run the grader as an unprivileged user (RLIMIT_NPROC then bounds fork bombs), or give it a "
              "writable pids cgroup: GRADER_SANDBOX_PIDS_CGROUP=/sys/fs/cgroup/<delegated>")
OPT_OUT = "or opt out explicitly with GRADER_SANDBOX=off (submitted code then runs unsandboxed)"


class SandboxStatus(BaseModel):
    """What `grader doctor` prints and what the simulator checks before running submitted code."""

    model_config = ConfigDict(frozen=True)

    mode: SandboxMode
    available: bool
    detail: str  # how processes are bounded, or why the sandbox is unavailable
    fix: str = ""
    bwrap: str | None = None
    version: str | None = None
    pids_cgroup: str | None = None  # the parent of per-job pids cgroups (grader running as root)


def resolve_bwrap(name: str) -> str | None:
    if "/" in name:
        return name if os.access(name, os.X_OK) and Path(name).is_file() else None
    return shutil.which(name)


def python_binds() -> list[Path]:
    """The folders a child needs: the Python installation (and virtualenv) and the `evidence` package."""
    wanted = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), PACKAGE_HOME / "evidence"}
    return sorted(p for p in wanted if p.exists())


def _os_args() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _OS_LINKS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    return args + ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]


def _namespace_args(config: SandboxConfig) -> list[str]:
    return ["--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--disable-userns", "--uid", str(config.uid), "--gid", str(config.gid),
            "--hostname", "sandbox", "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def command(bwrap: str, config: SandboxConfig, job_dir: Path, env: dict[str, str], argv: list[str]) -> list[str]:
    """bwrap ... -- argv, with `job_dir` at /job (read-only) and `job_dir`/out writable."""
    args = [bwrap, *_namespace_args(config), *_os_args()]
    binds = python_binds() + ([Path(env["PYTHONPYCACHEPREFIX"])] if "PYTHONPYCACHEPREFIX" in env else [])
    for folder in binds:
        args += ["--ro-bind", str(folder), str(folder)]
    args += ["--ro-bind", str(job_dir), JOB, "--bind", str(job_dir / "out"), f"{JOB}/out", "--chdir", "/tmp"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    return [*args, "--", *argv]


def sandbox_status(config: SandboxConfig) -> SandboxStatus:
    """Whether submitted code can run sandboxed under `config` (probed once per bwrap, uid and cgroup)."""
    if config.mode is SandboxMode.off:
        return SandboxStatus(mode=config.mode, available=True, fix="unset GRADER_SANDBOX to sandbox submitted code",
                             detail="OFF by the operator's choice: submitted code runs without bubblewrap "
                                    "(rlimits, a clean environment and separate processes only)")
    return _probe(config.bwrap, config.uid, config.gid, config.pids_cgroup)


@lru_cache(maxsize=16)
def _probe(name: str, uid: int, gid: int, cgroup: str | None) -> SandboxStatus:
    mode = SandboxMode.bwrap
    path = resolve_bwrap(name)
    if path is None:
        return SandboxStatus(mode=mode, available=False, detail=f"bubblewrap not found ({name!r})",
                             fix=f"{INSTALL_FIX}; {OPT_OUT}")
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
        config = SandboxConfig(bwrap=path, uid=uid, gid=gid)
        probe = subprocess.run([path, *_namespace_args(config), *_os_args(), "--", "/usr/bin/true"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError) as exc:
        return SandboxStatus(mode=mode, available=False, bwrap=path, detail=f"bubblewrap cannot run: {exc}",
                             fix=f"{INSTALL_FIX}; {OPT_OUT}")
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or [f"exit code {probe.returncode}"])[-1]
        return SandboxStatus(mode=mode, available=False, bwrap=path, version=version,
                             detail=f"bubblewrap cannot create namespaces: {reason}", fix=f"{USERNS_FIX}; {OPT_OUT}")
    if os.geteuid() != 0:
        return SandboxStatus(mode=mode, available=True, bwrap=path, version=version,
                             detail="namespaces ok; processes bounded by RLIMIT_NPROC (unprivileged grader)")
    parent = pids_parent(cgroup)
    if parent is None:
        return SandboxStatus(mode=mode, available=False, bwrap=path, version=version,
                             detail="the grader runs as root, where RLIMIT_NPROC does not bind, and no writable "
                                    "pids cgroup was found" + (f" at {cgroup}" if cgroup else ""),
                             fix=f"{CGROUP_FIX}; {OPT_OUT}")
    return SandboxStatus(mode=mode, available=True, bwrap=path, version=version, pids_cgroup=str(parent),
                         detail=f"namespaces ok; running as root, so processes are bounded by a pids cgroup per "
                                f"child under {parent}")
