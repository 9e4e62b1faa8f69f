"""One executor interface for calibration and audit runs: a local process pool, or Ray for clusters.

Both run the same top-level function over the same task objects and hand back results in input
order, so a run gives identical results whichever executor graded it. `on_done(index, result)` is
called as each task finishes (in completion order), for progress bars.

Ray is an optional extra (`pip install -e '.[ray]'`); `RayExecutor(address=None)` starts a local
Ray instance, `address="ray://..."` or `"auto"` joins a cluster.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Protocol, TypeVar

from grader.errors import GraderError

T = TypeVar("T")
R = TypeVar("R")
OnDone = Callable[[int, Any], None]
EXECUTORS = ("local", "ray")


class Executor(Protocol):
    name: str
    workers: int

    def map(self, fn: Callable[[T], R], tasks: Sequence[T], on_done: OnDone | None = None) -> list[R]: ...


class LocalExecutor:
    """A pool of `workers` processes (spawned: no state inherited from the caller, as on a cluster)."""

    name = "local"

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise GraderError(f"workers must be at least 1, got {workers}")
        self.workers = workers

    def map(self, fn: Callable[[T], R], tasks: Sequence[T], on_done: OnDone | None = None) -> list[R]:
        results: list[Any] = [None] * len(tasks)
        if not tasks:
            return results
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(self.workers, len(tasks)), mp_context=ctx) as pool:
            futures = {pool.submit(fn, task): i for i, task in enumerate(tasks)}
            for future in as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                if on_done:
                    on_done(i, results[i])
        return results


class RayExecutor:
    """Tasks as Ray remote functions, at most `workers` in flight; joins `address` or starts a local Ray."""

    name = "ray"

    def __init__(self, workers: int = 1, address: str | None = None) -> None:
        try:
            import ray
        except ImportError as exc:
            raise GraderError("the ray executor needs Ray: pip install -e '.[ray]'") from exc
        self.ray = ray
        self.workers = workers
        self.address = address
        self._started = False

    def _ensure(self) -> None:
        if self.ray.is_initialized():
            return
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        if self.address:
            kwargs["address"] = self.address
        else:
            kwargs.update(num_cpus=self.workers, object_store_memory=256 * 2**20)  # a small local instance
        self.ray.init(**kwargs)
        self._started = True

    def map(self, fn: Callable[[T], R], tasks: Sequence[T], on_done: OnDone | None = None) -> list[R]:
        results: list[Any] = [None] * len(tasks)
        if not tasks:
            return results
        self._ensure()
        remote = self.ray.remote(num_cpus=1, max_retries=0)(fn)
        pending: dict[Any, int] = {}
        queue = list(enumerate(tasks))
        while queue or pending:
            while queue and len(pending) < self.workers:
                i, task = queue.pop(0)
                pending[remote.remote(task)] = i
            done, _ = self.ray.wait(list(pending), num_returns=1)
            for ref in done:
                i = pending.pop(ref)
                results[i] = self.ray.get(ref)
                if on_done:
                    on_done(i, results[i])
        return results

    def shutdown(self) -> None:
        if self._started and self.ray.is_initialized():
            self.ray.shutdown()
        self._started = False


def make_executor(kind: str = "local", workers: int = 1, address: str | None = None) -> LocalExecutor | RayExecutor:
    if kind == "local":
        if address:
            raise GraderError("--address applies to the ray executor only")
        return LocalExecutor(workers)
    if kind == "ray":
        return RayExecutor(workers, address)
    raise GraderError(f"unknown executor {kind!r}; use {' or '.join(EXECUTORS)}")
