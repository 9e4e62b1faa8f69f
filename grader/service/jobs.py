"""Durable jobs: enqueue, claim under a lease, heartbeat, finish. Every state change is written to the
audit log in the same transaction.

Claiming is atomic on both databases: on PostgreSQL `SELECT ... FOR UPDATE SKIP LOCKED` lets many
workers on many machines take different jobs at once; on SQLite the write transaction holds the
database's single write lock (BEGIN IMMEDIATE), so two workers cannot take the same row. A job whose
lease lapsed (its worker died) is re-queued, or failed once it has used `max_attempts` claims.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import Select, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grader.service.errors import QueueFull
from grader.store import audit_log
from grader.store.db import Store
from grader.store.models import Job

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"
STATES = (QUEUED, RUNNING, DONE, FAILED)


def worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _locked(store: Store, query: Select) -> Select:
    return query.with_for_update(skip_locked=True) if store.dialect == "postgresql" else query


def _log(session: Session, job: Job, action: str, actor: str, **data: Any) -> None:
    audit_log.append(session, actor=actor, action=action, subject=f"job:{job.id}",
                     data={"kind": job.kind, "state": job.state, "attempts": job.attempts, **data})


def enqueue(session: Session, *, kind: str, params: dict[str, Any], submitted_by: str, max_attempts: int,
            queue_max: int, submission_id: str | None = None, task_id: str | None = None,
            idempotency_key: str | None = None) -> tuple[Job, bool]:
    """A new queued job, or the existing one for this caller's idempotency key (created=False)."""
    def same_key() -> Job | None:
        return session.scalars(select(Job).where(Job.submitted_by == submitted_by,
                                                 Job.idempotency_key == idempotency_key)).first()

    if idempotency_key is not None and (existing := same_key()) is not None:
        return existing, False
    waiting = session.scalar(select(func.count()).select_from(Job).where(Job.state == QUEUED)) or 0
    if waiting >= queue_max:
        raise QueueFull(f"the job queue is full ({waiting} queued); retry later", retry_after_s=5)
    job = Job(id=uuid.uuid4().hex, kind=kind, state=QUEUED, submission_id=submission_id, task_id=task_id,
              params=params, submitted_by=submitted_by, idempotency_key=idempotency_key, attempts=0,
              max_attempts=max_attempts, created_at=time.time())
    try:
        with session.begin_nested():  # a concurrent retry with the same key may have inserted it first
            session.add(job)
    except IntegrityError:
        if idempotency_key is None or (existing := same_key()) is None:
            raise
        return existing, False
    _log(session, job, "job.queued", submitted_by, submission=submission_id)
    return job, True


def _reap_lapsed(store: Store, session: Session, now: float) -> None:
    lapsed = _locked(store, select(Job).where(Job.state == RUNNING, Job.lease_until < now).limit(20))
    for job in session.scalars(lapsed):
        lost = job.worker
        job.worker, job.lease_until = None, None
        if job.attempts >= job.max_attempts:
            job.state, job.finished_at = FAILED, now
            job.error = f"worker {lost} stopped responding; all {job.max_attempts} attempts used"
            _log(session, job, "job.failed", "system", reason=job.error)
        else:
            job.state = QUEUED
            _log(session, job, "job.requeued", "system", reason=f"lease of worker {lost} lapsed")


def claim(store: Store, worker: str, lease_s: float, kinds: tuple[str, ...] | None = None) -> Job | None:
    """Take the oldest claimable job, or None. Cheap when idle: one read, no write lock."""
    now = time.time()
    claimable = or_(Job.state == QUEUED, (Job.state == RUNNING) & (Job.lease_until < now))
    with store.read() as session:
        if session.scalar(select(Job.id).where(claimable).limit(1)) is None:
            return None
    with store.write() as session:
        _reap_lapsed(store, session, now)
        query = select(Job).where(Job.state == QUEUED)
        if kinds:
            query = query.where(Job.kind.in_(kinds))
        job = session.scalars(_locked(store, query.order_by(Job.created_at).limit(1))).first()
        if job is None:
            return None
        job.state, job.worker, job.attempts = RUNNING, worker, job.attempts + 1
        job.lease_until, job.started_at = now + lease_s, now
        _log(session, job, "job.started", worker)
        return job


def heartbeat(store: Store, job_id: str, worker: str, lease_s: float) -> bool:
    """Extend the lease; False when this worker no longer holds the job (it lapsed and moved on)."""
    with store.write() as session:
        result = session.execute(update(Job).where(Job.id == job_id, Job.worker == worker, Job.state == RUNNING)
                                 .values(lease_until=time.time() + lease_s))
        return result.rowcount == 1


def _held(session: Session, store: Store, job_id: str, worker: str) -> Job | None:
    job = session.scalars(_locked(store, select(Job).where(Job.id == job_id))).first()
    return job if job is not None and job.state == RUNNING and job.worker == worker else None


def finish(store: Store, job_id: str, worker: str, record: Callable[[Session, Job], dict[str, Any]]) -> bool:
    """Mark done and store the result through `record` in one transaction, only if still held."""
    with store.write() as session:
        job = _held(session, store, job_id, worker)
        if job is None:
            return False
        details = record(session, job)
        job.state, job.finished_at, job.lease_until, job.error = DONE, time.time(), None, None
        _log(session, job, "job.done", worker, **details)
        return True


def fail(store: Store, job_id: str, worker: str, reason: str, *, retry: bool) -> bool:
    """Fail the job (or re-queue it when `retry` and attempts remain)."""
    with store.write() as session:
        job = _held(session, store, job_id, worker)
        if job is None:
            return False
        job.worker, job.lease_until, job.error = None, None, reason
        if retry and job.attempts < job.max_attempts:
            job.state = QUEUED
            _log(session, job, "job.requeued", worker, reason=reason)
        else:
            job.state, job.finished_at = FAILED, time.time()
            _log(session, job, "job.failed", worker, reason=reason)
        return True


def release(store: Store, job_id: str, worker: str, reason: str) -> bool:
    """Give a job back without using up an attempt (graceful shutdown that cannot finish it)."""
    with store.write() as session:
        job = _held(session, store, job_id, worker)
        if job is None:
            return False
        job.state, job.worker, job.lease_until, job.attempts = QUEUED, None, None, max(job.attempts - 1, 0)
        _log(session, job, "job.requeued", worker, reason=reason)
        return True


def release_worker(store: Store, worker: str, reason: str, *, died: bool) -> int:
    """Re-queue every job a worker holds; returns how many. A worker that died used up an attempt
    (a submission that kills its worker every time must not loop forever); one stopped by us did not."""
    with store.read() as session:
        ids = list(session.scalars(select(Job.id).where(Job.worker == worker, Job.state == RUNNING)))
    if died:
        return sum(fail(store, job_id, worker, reason, retry=True) for job_id in ids)
    return sum(release(store, job_id, worker, reason) for job_id in ids)


def counts_by_state(session: Session) -> dict[str, int]:
    rows = session.execute(select(Job.state, func.count()).group_by(Job.state))
    return {state: 0 for state in STATES} | {state: n for state, n in rows}
