"""Where benchmark (e)'s time goes: a diagnostic, not a benchmark (it prints no target).

Runs `bench_sim_generated`'s kernel once (or `--small`) with light instrumentation and prints:
- wall time, process CPU, the simulating thread's CPU and the page faults of the run;
- the simulating thread's time per op (inside `dispatch.call`: waits for pending jobs included);
- the workers' jobs: wall and thread CPU per kind of step (their difference is time spent waiting:
  GIL hand-offs, the previous step of a chain, the shared cores);
- a timeline in `--bins N` slices: how busy the simulating thread and the workers were in each.

Timings move with the machine's load: compare two versions in alternation, in the same minutes.
"""

from __future__ import annotations

import collections
import resource
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_sim_generated  # noqa: E402

from evidence.nki import dispatch, load_kernel, simulate  # noqa: E402
from evidence.nki import pipeline as pipeline_module  # noqa: E402
from evidence.nki.ops import memory  # noqa: E402
from evidence.nki.product_batch import ProductBatch  # noqa: E402


class Recorder:
    """Intervals of the simulating thread's ops and of the workers' job steps."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, float, float]] = []
        self.steps: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
        self.jobs: list[tuple[float, float]] = []
        self.lock = threading.Lock()

    def clear(self) -> None:
        self.calls.clear()
        self.steps.clear()
        self.jobs.clear()


def instrument(rec: Recorder) -> list[tuple[object, str, object]]:
    """Wrap dispatch.call (and the modules that imported it), Job.run and the two worker step kinds; the
    (owner, attribute, original) triples that `restore` puts back."""
    real_call = dispatch.call
    undo: list[tuple[object, str, object]] = [(dispatch, "call", real_call)]

    def call(name, args, kwargs, into=None):
        t0 = time.perf_counter()
        try:
            return real_call(name, args, kwargs, into)
        finally:
            rec.calls.append((name, t0, time.perf_counter()))

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("evidence.nki") and getattr(module, "call", None) is real_call:
            undo.append((module, "call", real_call))
            module.call = call
    dispatch.call = call

    def timed(owner, attr: str, label: str, interval: bool = False) -> None:
        real = getattr(owner, attr)

        def wrapper(self, *a, **k):
            w, c = time.perf_counter(), time.thread_time()
            try:
                return real(self, *a, **k)
            finally:
                w1 = time.perf_counter()
                with rec.lock:
                    s = rec.steps[label]
                    s[0] += w1 - w
                    s[1] += time.thread_time() - c
                    s[2] += 1
                    if interval:
                        rec.jobs.append((w, w1))

        undo.append((owner, attr, real))
        setattr(owner, attr, wrapper)

    timed(pipeline_module.Job, "run", "job (all steps, waits for dependencies)", interval=True)
    timed(ProductBatch, "run", "product batch (products, PSUM additions)")
    timed(memory.PendingCopy, "run", "copy out of PSUM")
    return undo


def restore(undo: list[tuple[object, str, object]]) -> None:
    for owner, attr, original in reversed(undo):
        setattr(owner, attr, original)


def report(rec: Recorder, t0: float, t1: float, bins: int) -> None:
    per_op: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
    for name, a, b in rec.calls:
        per_op[name][0] += b - a
        per_op[name][1] += 1
    print("simulating thread, per op (inside dispatch.call):")
    for name, (total, n) in sorted(per_op.items(), key=lambda kv: -kv[1][0])[:12]:
        print(f"  {name:24s} {total:7.2f} s {n:8d} calls {total / n * 1e6:8.1f} us")
    print("workers, per step kind: wall, thread CPU, count")
    for label, (wall, cpu, n) in sorted(rec.steps.items(), key=lambda kv: -kv[1][0]):
        print(f"  {label:42s} {wall:7.2f} s {cpu:7.2f} s {n:8d}")
    width = (t1 - t0) / bins
    sim, work = [0.0] * bins, [0.0] * bins

    def spread(into: list[float], a: float, b: float) -> None:
        a, b = max(a - t0, 0.0), min(b - t0, t1 - t0)  # clipped to the run: an interval may end after it
        if a >= b:
            return
        for i in range(min(int(a / width), bins - 1), min(int(b / width), bins - 1) + 1):
            end = b if i == bins - 1 else min(b, (i + 1) * width)  # by slice index: no float step can stall
            into[i] += max(0.0, end - max(a, i * width))

    for _, a, b in rec.calls:
        spread(sim, a, b)
    for a, b in rec.jobs:
        spread(work, a, b)
    print(f"timeline ({bins} slices of {width:.2f} s): share of the slice the simulating thread spent in ops, "
          "worker threads busy in jobs")
    for i in range(bins):
        print(f"  {i * width:6.2f} s  ops {sim[i] / width:4.2f}  workers {work[i] / width:4.2f}")


def main(small: bool, bins: int) -> None:
    m, k, n = (512, 2048, 1024) if small else (4096, 12288, 5120)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    kernel = load_kernel(bench_sim_generated.KERNEL).sg0000[n // 1024]
    rec = Recorder()
    undo = instrument(rec)
    try:
        simulate(kernel, a, b, keep_trace=False)  # warm-up: imports, BLAS, the page pool's first mappings
        rec.clear()
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        t0, c0, s0 = time.perf_counter(), time.process_time(), time.thread_time()
        sim = simulate(kernel, a, b, keep_trace=False)
        t1, c1, s1 = time.perf_counter(), time.process_time(), time.thread_time()
        r1 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        restore(undo)
    print(f"{m}x{k}x{n}: {sim.report.instructions} instructions; wall {t1 - t0:.2f} s, process CPU {c1 - c0:.2f} s, "
          f"simulating thread CPU {s1 - s0:.2f} s, page faults {r1.ru_minflt - r0.ru_minflt}, "
          f"system time {r1.ru_stime - r0.ru_stime:.2f} s")
    report(rec, t0, t1, bins)


if __name__ == "__main__":
    main("--small" in sys.argv, int(sys.argv[sys.argv.index("--bins") + 1]) if "--bins" in sys.argv else 20)
