"""The job queue itself on both databases: exclusive claims, lapsed leases re-queued then failed when
attempts run out, results only from the lease holder, idempotency under a concurrent retry."""

from __future__ import annotations

import threading
import time

from grader.service import jobs
from grader.store.models import Job


def enqueue(store, key: str | None = None, attempts: int = 2) -> Job:  # type: ignore[no-untyped-def]
    with store.write() as s:
        job, _ = jobs.enqueue(s, kind="evaluation", params={}, submitted_by="k1", max_attempts=attempts,
                              queue_max=100, idempotency_key=key)
        return job


def test_claims_are_exclusive(store):
    made = {enqueue(store).id for _ in range(6)}
    claimed: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> None:
        while (job := jobs.claim(store, name, lease_s=30)) is not None:
            with lock:
                claimed.append(job.id)

    threads = [threading.Thread(target=worker, args=(f"w{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(claimed) == sorted(made)  # every job claimed once, none twice


def test_a_lapsed_lease_requeues_then_fails_when_attempts_run_out(store):
    job = enqueue(store, attempts=2)
    assert jobs.claim(store, "dead-1", lease_s=0.2).id == job.id
    time.sleep(0.3)
    again = jobs.claim(store, "alive", lease_s=0.2)  # re-queued by the lapse, claimed again
    assert again.id == job.id and again.attempts == 2
    assert not jobs.finish(store, job.id, "dead-1", lambda s, j: {})  # the first worker's result is refused
    time.sleep(0.3)
    assert jobs.claim(store, "third", lease_s=1) is None
    with store.read() as s:
        final = s.get(Job, job.id)
    assert final.state == "failed" and "all 2 attempts used" in final.error


def test_heartbeats_keep_the_lease(store):
    job = enqueue(store)
    jobs.claim(store, "w", lease_s=0.5)
    for _ in range(4):
        time.sleep(0.2)
        assert jobs.heartbeat(store, job.id, "w", lease_s=0.5)
    assert jobs.claim(store, "other", lease_s=0.5) is None
    assert jobs.finish(store, job.id, "w", lambda s, j: {})


def test_a_concurrent_retry_with_the_same_key_gets_the_same_job(store):
    result: list[Job] = []
    with store.write() as s:
        first, _ = jobs.enqueue(s, kind="evaluation", params={}, submitted_by="k1", max_attempts=1, queue_max=100,
                                idempotency_key="same")
        retry = threading.Thread(target=lambda: result.append(enqueue(store, key="same")))
        retry.start()
        time.sleep(1.0)  # the retry runs while the first insert is uncommitted
    retry.join(30)
    assert result and result[0].id == first.id


def test_a_job_outliving_the_grace_period_is_requeued_without_ending_the_host_process(store, settings, monkeypatch):
    """A Worker run in a thread (tests, an embedding service) gives a stuck job back to the queue and stops;
    only `grader worker` ends its own process. (This once ended the test run itself with exit status 0.)"""
    from grader.service import worker as worker_module

    release = threading.Event()

    def stuck(store, settings, job):  # type: ignore[no-untyped-def]
        release.wait(30)
        return lambda s, j: {}

    monkeypatch.setattr(worker_module, "handlers", lambda: {"evaluation": stuck})
    job = enqueue(store)
    w = worker_module.Worker(store, settings.model_copy(update={"shutdown_grace_s": 0.3}), name="w", poll_s=0.05)
    thread = threading.Thread(target=w.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with store.read() as s:
            if s.get(Job, job.id).state == jobs.RUNNING:
                break
        time.sleep(0.05)
    w.stop.set()
    thread.join(20)
    release.set()
    assert not thread.is_alive() and w.abandoned_job == job.id
    with store.read() as s:
        again = s.get(Job, job.id)
    assert again.state == jobs.QUEUED and again.worker is None
