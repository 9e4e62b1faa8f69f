"""A worker: claims jobs, runs them in a thread while the main thread keeps the lease alive, stores
the result. SIGTERM/SIGINT: stop claiming, finish the running job, exit; a job still running after
the grace period is given back to the queue (not counted as an attempt) before exiting."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from grader.errors import GraderError
from grader.service import jobs
from grader.settings import Settings
from grader.store.db import Store
from grader.store.models import Job

log = logging.getLogger("grader.worker")

# kind -> handler(store, settings, job) returning a recorder that stores the result inside `finish`.
Handler = Callable[[Store, Settings, Job], Callable[[Session, Job], dict[str, Any]]]


def handlers() -> dict[str, Handler]:
    from grader.service.audits import run_audit_job
    from grader.service.calibration import run_calibration_job
    from grader.service.evaluations import run_evaluation_job

    return {"evaluation": run_evaluation_job, "calibration": run_calibration_job, "audit": run_audit_job}


@dataclass
class Worker:
    store: Store
    settings: Settings
    name: str = field(default_factory=jobs.worker_id)
    poll_s: float = 0.2
    parent_pid: int | None = None  # exit when this process is gone (orphaned by a killed server)
    stop: threading.Event = field(default_factory=threading.Event)
    # Set when a job outlived the shutdown grace period: its thread cannot be interrupted, so the owner
    # of the process (`grader worker`) ends the process. A Worker run in a thread of some other program
    # (tests, an embedding service) must never end that program.
    abandoned_job: str | None = None

    def install_signal_handlers(self) -> None:
        def request_stop(signum: int, _frame: object) -> None:
            log.info("worker stopping", extra={"worker": self.name, "signal": signum})
            self.stop.set()

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)

    def run(self, max_jobs: int | None = None) -> int:
        """Process jobs until stopped (or `max_jobs` done); returns the number processed."""
        done, idle = 0, self.poll_s
        while not self.stop.is_set() and self.abandoned_job is None and (max_jobs is None or done < max_jobs):
            if self.parent_pid is not None and os.getppid() != self.parent_pid:
                log.warning("server process gone; worker exiting", extra={"worker": self.name})
                break
            job = jobs.claim(self.store, self.name, self.settings.job_lease_s, tuple(handlers()))
            if job is None:
                self.stop.wait(idle)
                idle = min(idle * 1.5, 1.0)
                continue
            idle = self.poll_s
            self.process(job)
            done += 1
        return done

    def process(self, job: Job) -> None:
        outcome: dict[str, Any] = {}

        def target() -> None:
            try:
                outcome["record"] = handlers()[job.kind](self.store, self.settings, job)
            except GraderError as exc:  # bad input: deterministic, retrying cannot help
                outcome["error"], outcome["retry"] = exc.one_line(), False
            except Exception as exc:  # noqa: BLE001 - a job boundary: anything else may be transient
                log.exception("job crashed", extra={"job": job.id})
                outcome["error"], outcome["retry"] = f"internal error: {type(exc).__name__}: {exc}".splitlines()[0], True

        thread = threading.Thread(target=target, name=f"job-{job.id[:8]}", daemon=True)
        thread.start()
        lease = self.settings.job_lease_s
        beat_every = max(lease / 3, 0.1)
        stop_seen: float | None = None
        last_beat = time.monotonic()
        while thread.is_alive():
            thread.join(min(beat_every, 0.5))
            if not thread.is_alive():
                break
            if self.stop.is_set():
                stop_seen = stop_seen or time.monotonic()
                if time.monotonic() - stop_seen > self.settings.shutdown_grace_s:
                    jobs.release(self.store, job.id, self.name, "worker shut down before the job finished")
                    log.warning("grace period over; job re-queued", extra={"job": job.id})
                    self.abandoned_job = job.id
                    return
            if time.monotonic() - last_beat < beat_every:
                continue
            last_beat = time.monotonic()
            if not jobs.heartbeat(self.store, job.id, self.name, lease):
                log.warning("lease lost; result will be discarded", extra={"job": job.id})
        if "record" in outcome:
            if not jobs.finish(self.store, job.id, self.name, outcome["record"]):
                log.warning("job no longer held; result discarded", extra={"job": job.id})
        else:
            jobs.fail(self.store, job.id, self.name, outcome.get("error", "job ended without a result"),
                      retry=outcome.get("retry", True))
