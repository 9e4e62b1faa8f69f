"""TensorE work overlapping the kernel's Python: matmuls and PSUM accumulation on worker threads.

Trainium's engines run concurrently, synchronised by data dependencies. The simulator models
that for its heaviest work: a matmul (and the PSUM accumulation that consumes it) is checked,
traced and planned in program order on the simulating thread, then its numpy work runs on a
worker thread (numpy releases the GIL in BLAS) while the kernel's Python goes on, so independent
`affine_range` iterations and SPMD instances compute on several cores at once.

Determinism: hazards are tracked per allocation. A job waits for the earlier job that wrote any
allocation it reads or writes, and for earlier readers of any allocation it writes; everything
else the simulator does runs in program order and first waits for the jobs touching what it uses
(`settle`). So every element gets the same writes in the same order as a serial run, and results,
trace and findings do not depend on timing. Jobs hold numpy arrays only, never tensors or
allocations, so on-chip liveness (SBUF/PSUM peaks, the trace's release points) stays the kernel's.
BLAS runs single-threaded inside a simulation: the tiles are small, and the workers supply the
parallelism. The workers belong to one simulation and are joined when it ends (`close`): no thread
outlives the call (the sandbox's monitor counts threads a submission leaves running).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from queue import SimpleQueue

import numpy as np
from threadpoolctl import ThreadpoolController

from evidence.nki.process_setting import ProcessSetting

_lock = threading.Lock()
_blas: ThreadpoolController | None = None


def default_workers() -> int:
    """Worker threads: `NKI_SIM_WORKERS` when set (0: everything inline), else the cores this process
    may use (one core: no workers)."""
    env = os.environ.get("NKI_SIM_WORKERS", "").strip()
    if env.isdigit():
        return min(int(env), 16)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return min(cores, 8) if cores > 1 else 0


def single_threaded_blas():
    """A context that pins BLAS to one thread (threadpoolctl; the controller is built once)."""
    global _blas
    with _lock:
        if _blas is None:
            _blas = ThreadpoolController()
    return _blas.limit(limits=1, user_api="blas")


_SWITCH_S = 0.0005
_switch_before = [0.005]


def _shorten_switch() -> None:
    _switch_before[0] = sys.getswitchinterval()
    sys.setswitchinterval(min(_SWITCH_S, _switch_before[0]))


_short_switch = ProcessSetting(_shorten_switch, lambda: sys.setswitchinterval(_switch_before[0]))


@contextmanager
def prompt_gil_handoff(workers: int):
    """While inside (with workers), a thread waiting for the GIL gets it after 0.5 ms instead of 5 ms.

    The simulating thread runs Python without pause while jobs are pending, and a worker needs the GIL
    back after every numpy call it makes (a product takes about 0.2 ms): with the default switch
    interval it would wait up to 5 ms each time, idle. Process-wide, so re-entrant and restored."""
    if workers <= 0:
        yield
        return
    with _short_switch.held():
        yield


class Job:
    """One unit of worker work: steps that run in order on one thread (e.g. a matmul's products and the PSUM
    accumulation that consumes them: one thread hand-off instead of two). Each step waits only for its own
    dependencies, just before it runs: the products of one accumulation group run on several workers at
    once, and only the additions into the accumulator wait for each other.

    Lighter than `concurrent.futures.Future` (a Condition and its notify per job, which the simulating thread
    and the workers contend for): a lock held until the job has run."""

    __slots__ = ("steps", "finished", "error", "_lock")

    def __init__(self) -> None:
        self.steps: list = []  # (jobs this step waits for, fn)
        self.finished = False
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self._lock.acquire()

    def done(self) -> bool:
        return self.finished

    def result(self) -> None:
        """Wait until the job has run; raise its failure."""
        if not self.finished:
            self._lock.acquire()
            self._lock.release()
        if self.error is not None:
            raise self.error

    def run(self) -> None:
        try:
            for deps, fn in self.steps:
                for d in deps:
                    d.result()  # earlier jobs were queued first (FIFO), so they are running or done: no deadlock
                fn()
        except BaseException as exc:  # noqa: BLE001 - delivered to whoever waits for the job
            self.error = exc
        self.steps = []  # the arrays the steps hold go now, not when the job is forgotten
        self.finished = True
        self._lock.release()


def _work(queue: SimpleQueue, started: list) -> None:
    started.append(threading.get_native_id())  # list.append is atomic
    # as on the simulating thread (simulate): overflow and NaN are values to trace, not warnings; numpy's
    # error state is per thread (a context variable), so a new thread starts with numpy's defaults
    with np.errstate(all="ignore"):
        while (job := queue.get()) is not None:
            job.run()


def _writers_of(a, block: int | None, me: Job, deps: list) -> None:
    """The pending jobs an access to allocation `a` (to one block of it, or anywhere) must follow."""
    if a.writer is None:
        return
    if a.block_writers is None:
        if a.writer is not me:
            deps.append(a.writer)
        return
    if a.whole_writer is not None and a.whole_writer is not me:
        deps.append(a.whole_writer)
    if block is None:
        deps.extend(j for j in a.block_writers.values() if j is not me)
    else:
        j = a.block_writers.get(block)
        if j is not None and j is not me:
            deps.append(j)


def _wait_for_writers(a) -> None:
    """Every pending job writing allocation `a` has run (its block writers run in any order)."""
    if a.block_writers:
        for j in a.block_writers.values():
            j.result()
    if a.whole_writer is not None:
        a.whole_writer.result()
    a.writer.result()
    a.writer = a.whole_writer = a.block_writers = None


class Pipeline:
    """The jobs of one simulation and the hazards they hold on allocations (`Alloc.writer`/`readers`)."""

    def __init__(self, workers: int) -> None:
        # threads start on the first job and stop in close()
        self.workers = workers
        self.threads: list[threading.Thread] = []
        self.worker_ids: list[int] = []  # native thread ids, to wait until the OS has removed them
        self.queue: SimpleQueue | None = SimpleQueue() if workers > 0 else None
        self.jobs: deque[Job] = deque()
        self.held: Job | None = None
        self.batch = None  # the latest product batch (evidence.nki.product_batch); open while its job is held
        self.copy = None  # the latest copy out of pending values (ops.memory.PendingCopy), likewise

    @property
    def busy(self) -> bool:
        """Jobs pending or held: the simulating thread must settle before touching tensor data."""
        return bool(self.jobs) or self.held is not None

    def run(self, fn, reads=(), writes=(), hold: bool = False, merge: bool = False, block: int | None = None) -> None:
        """Run `fn` (numpy work on arrays only) after the jobs it depends on, on a worker when there are any.

        `hold`: more steps for the same job are likely to follow at once (the next `run` joins them);
        the job is submitted by the next `run` without `hold`, or before anything waits.
        `merge` (with a held job): no new step; the held job's last step also does this work (a product
        batch taking one more matmul, evidence.nki.product_batch), so it also waits for these dependencies.
        `block` (with one allocation in `writes`): the job writes only that block of it (`Tensor._one_block`),
        so it waits for earlier writers of that block and of the whole allocation, not for other blocks'."""
        if self.queue is None:
            self.settle(reads, writes)
            fn()
            return
        me = self.held
        if me is None:
            me = self.held = Job()
        deps = []
        for a in reads:
            _writers_of(a, None, me, deps)
        for a in writes:
            _writers_of(a, block, me, deps)
            deps.extend(r for r in a.readers if r is not me)
        if merge and me.steps:
            me.steps[-1][0].extend(deps)
        else:
            me.steps.append((deps, fn))
        for a in writes:
            a.writer, a.readers, a.zeros = me, [], False
            if block is None:
                a.whole_writer, a.block_writers = me, None
            elif a.block_writers is None:
                a.block_writers = {block: me}
            else:
                a.block_writers[block] = me
        for a in reads:
            readers = a.readers
            if readers and readers[-1] is me:
                continue
            n = len(readers)
            if n >= 16 and not n & (n - 1):  # pruned at powers of two: amortised constant time
                readers[:] = [r for r in readers if not r.finished]
            readers.append(me)
        if not hold:
            self._submit()

    def submit(self) -> None:
        """Hand the held job (if any) to the workers now."""
        self._submit()

    def _submit(self) -> None:
        job, self.held = self.held, None
        if job is None:
            return
        if self.queue is not None and len(self.threads) < self.workers and not self._start_worker():
            self._stop_workers()  # no thread can start (a process limit): everything inline from now on
        if self.queue is None:
            job.run()
        else:
            self.queue.put(job)
        jobs = self.jobs
        jobs.append(job)
        if len(jobs) > 64:  # bound the memory pending results hold; failures surface in program order
            jobs.popleft().result()
            while jobs and jobs[0].finished:
                jobs.popleft().result()

    def parallel(self, fns: list) -> list:
        """Run independent callables (touching no tensor) on the workers and this thread; their results."""
        results = [None] * len(fns)

        def step(i: int, fn) -> None:
            results[i] = fn()

        if self.held is not None:
            self._submit()
        while self.queue is not None and len(self.threads) < min(self.workers, len(fns) - 1):
            if not self._start_worker():
                self._stop_workers()
        if self.queue is None or len(fns) < 2:
            return [fn() for fn in fns]
        jobs = []
        for i in range(1, len(fns)):
            job = Job()
            job.steps.append(((), lambda i=i: step(i, fns[i])))
            self.queue.put(job)
            jobs.append(job)
        step(0, fns[0])
        for job in jobs:
            job.result()
        return results

    def _start_worker(self) -> bool:
        t = threading.Thread(target=_work, args=(self.queue, self.worker_ids), daemon=True,
                             name=f"nki-sim-tensore_{len(self.threads)}")
        try:
            t.start()
        except RuntimeError:
            return False
        self.threads.append(t)
        return True

    def settle(self, reads=(), writes=()) -> None:
        """Before the simulating thread uses allocations: wait for their writers (and, to write, readers)."""
        if self.held is not None:
            self._submit()
        for a in reads:
            if a.writer is not None:
                _wait_for_writers(a)
        for a in writes:
            if a.writer is not None:
                _wait_for_writers(a)
            if a.readers:
                for r in a.readers:
                    r.result()
                a.readers = []

    def close(self) -> None:
        """Wait for every job, then stop and join the worker threads; the first job failure is raised."""
        try:
            self.drain()
        finally:
            self._stop_workers()

    def _stop_workers(self) -> None:
        """Join the workers (after the jobs queued so far) and wait until the OS has removed them:
        `Thread.join` returns when the Python thread state is gone, a moment before the thread leaves
        /proc/self/task, where the sandbox's monitor counts threads (a race it lost on most runs)."""
        if self.queue is None:
            return
        for _ in self.threads:
            self.queue.put(None)
        for t in self.threads:
            t.join()
        self.queue = None
        self.threads = []
        deadline = time.monotonic() + 2.0
        for tid in self.worker_ids:
            while os.path.exists(f"/proc/self/task/{tid}") and time.monotonic() < deadline:
                time.sleep(0.0002)
        self.worker_ids = []

    def drain(self) -> None:
        """Wait for every job; the first failure (in program order) is raised."""
        if self.held is not None:
            self._submit()
        jobs, self.jobs = self.jobs, deque()
        error = None
        for j in jobs:
            try:
                j.result()
            except BaseException as exc:  # noqa: BLE001 - re-raised below, after every job finished
                error = error or exc
        if error is not None:
            raise error
