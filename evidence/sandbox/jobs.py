"""One sandboxed job: a fresh job folder, the child, its outcome, and the folder removed afterwards.

    job/            (read-only at /job inside the sandbox)
      job.json      the ChildJob
      src/          the submission's files, minus those withheld from this side
      out/          the only writable place: result.json, *.npy, events.jsonl, fault.log

A folder is removed in the background once its outcome is read: the folder was bound into the child's
mount namespace, and removing it waits until the kernel has torn that namespace down (0.05-1.3 s per job,
seen here), time the evaluation need not wait for. Removals still pending when the process exits are
finished then.
"""

from __future__ import annotations

import atexit
import itertools
import os
import queue
import shutil
import tempfile
import threading
from pathlib import Path

from evidence.paths import safe_relpath
from evidence.sandbox import launcher
from evidence.sandbox.bwrap import JOB, SandboxStatus
from evidence.sandbox.config import SandboxConfig, SandboxMode
from evidence.sandbox.outcome import ChildOutcome, read_outcome
from evidence.sandbox.protocol import ChildJob

_counter = itertools.count(1)
# Outcomes that depend on the host as much as on the submission (load, memory, a killed child).
# Counted so that callers caching evidence can tell that a gather saw one (grader.evidence_cache).
HOST_DEPENDENT_CODES = frozenset({"timeout", "memory_limit", "cpu_limit", "crashed"})
_host_dependent = 0
_host_lock = threading.Lock()


def host_dependent_runs() -> int:
    """How many runs in this process so far ended in one of HOST_DEPENDENT_CODES."""
    return _host_dependent


def _note(outcome: ChildOutcome) -> ChildOutcome:
    global _host_dependent
    error = outcome.result.error
    if error is not None and error.code in HOST_DEPENDENT_CODES:
        with _host_lock:
            _host_dependent += 1
    return outcome


# Removals run on a few threads, since each mostly waits on the kernel; at most _PENDING folders (with the
# arrays in them) wait at once, after that a new job waits for a removal to finish.
_REMOVERS, _PENDING = 4, 32
_removals: queue.Queue[Path] = queue.Queue(maxsize=_PENDING)
_removers: list[threading.Thread] = []
_removers_lock = threading.Lock()


def _remove_forever() -> None:
    while True:
        shutil.rmtree(_removals.get(), ignore_errors=True)
        _removals.task_done()


def remove_later(job_dir: Path) -> None:
    """Remove `job_dir` on a background remover thread (started on first use)."""
    with _removers_lock:
        if not _removers:
            _removers.extend(threading.Thread(target=_remove_forever, name="nki-job-remover", daemon=True)
                             for _ in range(_REMOVERS))
            for thread in _removers:
                thread.start()
            atexit.register(_removals.join)
    _removals.put(job_dir)


def write_job(job_dir: Path, job: ChildJob, files: dict[str, str]) -> None:
    src = job_dir / "src"
    for rel, text in files.items():
        if rel in job.withheld:
            continue
        dest = src / safe_relpath(rel)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
    src.mkdir(exist_ok=True)
    (job_dir / "out").mkdir()
    (job_dir / "job.json").write_text(job.model_dump_json())


def run_job(job: ChildJob, files: dict[str, str], config: SandboxConfig, status: SandboxStatus,
            label: str = "") -> ChildOutcome:
    """Run `job` over the submission `files` in a child and read what it reported."""
    job_dir = Path(tempfile.mkdtemp(prefix=f"nki-job-{job.role}-"))
    try:
        write_job(job_dir, job, files)
        job_id = f"{label or job.role}-{os.getpid()}-{next(_counter)}"
        run = launcher.run(job_dir, config, status, job.timeout_s, job_id)
        src = f"{JOB}/src/" if config.mode is SandboxMode.bwrap else f"{job_dir}/src/"
        return _note(read_outcome(job, job_dir, run, src))  # arrays are read into memory, not mapped
    finally:
        remove_later(job_dir)
