"""One sandboxed job: a fresh job folder, the child, its outcome, and the folder removed afterwards.

    job/            (read-only at /job inside the sandbox)
      job.json      the ChildJob
      src/          the submission's files, minus those withheld from this side
      out/          the only writable place: result.json, *.npy, events.jsonl, fault.log
"""

from __future__ import annotations

import itertools
import os
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
        return _note(read_outcome(job, job_dir, run, src))
    finally:
        shutil.rmtree(job_dir, ignore_errors=True)
