"""Benchmark: what the sandbox adds to an evaluation's simulation, against the unsandboxed child.

Both sides run the same simulator collector on `examples/softmax-ragged-defect` (kernel child and
reference child at once), alternating so machine load hits both alike: `GRADER_SANDBOX=off`
(separate children with rlimits, no bubblewrap) against bubblewrap (namespaces, binds, and a pids
cgroup per child when running as root). Reports the median wall time per evaluation of each,
the difference (target: <= 150 ms added per evaluation) and the ratio; and the same for one bare
child (`python -c pass` under bwrap vs. directly), the floor of what bubblewrap itself costs.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

from evidence.nki.collector import SimulationCollector
from evidence.sandbox import bwrap
from evidence.sandbox.bwrap import sandbox_status
from evidence.sandbox.config import SandboxConfig, SandboxMode
from evidence.submission import Submission

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "softmax-ragged-defect"


def _submission() -> Submission:
    from grader.submission import load_submission

    return load_submission(EXAMPLE)


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(rounds: int = 12) -> float:
    sub = _submission()
    modes = {m: SimulationCollector(sandbox=SandboxConfig(mode=m)) for m in (SandboxMode.off, SandboxMode.bwrap)}
    status = sandbox_status(SandboxConfig())
    assert status.available, status.detail
    for collector in modes.values():  # warm up: page cache, the status probe
        assert any(i.kind == "sim.output" for i in collector.collect(sub))  # it ran
    times: dict[SandboxMode, list[float]] = {m: [] for m in modes}
    bare: dict[str, list[float]] = {"direct": [], "bwrap": []}
    argv = [sys.executable, "-s", "-c", "pass"]
    for _ in range(rounds):
        for mode, collector in modes.items():
            times[mode].append(_time(lambda c=collector: c.collect(sub)))
        bare["direct"].append(_time(lambda: subprocess.run(argv, check=True)))
        bare["bwrap"].append(_time(lambda: subprocess.run(_bare_bwrap(status.bwrap, argv), check=True)))
    off, on = (statistics.median(times[m]) for m in (SandboxMode.off, SandboxMode.bwrap))
    added = on - off
    print(f"evaluation's simulation (kernel + reference children), median of {rounds}: unsandboxed {off * 1e3:.0f} ms, "
          f"bubblewrap {on * 1e3:.0f} ms: +{added * 1e3:.0f} ms per evaluation, ratio {on / off:.2f}x "
          "(target: <= 150 ms added)")
    d, b = statistics.median(bare["direct"]), statistics.median(bare["bwrap"])
    print(f"bare child (python -c pass): direct {d * 1e3:.0f} ms, under bwrap {b * 1e3:.0f} ms: +{(b - d) * 1e3:.0f} ms")
    print(f"process bound: {status.detail}")
    _monitor_overhead()
    return added


def _monitor_overhead(iters: int = 1500) -> None:
    """The child's audit hook is called for every audited event the simulator raises (a frame
    lookup per instruction). Wall-clock A/B runs drown in the shared machine's noise, so: count the
    events of one simulation, time the hook's fast path per event, and compare with the
    simulation's CPU time."""
    import os
    import timeit

    import numpy as np

    from evidence.nki import load_kernel, simulate
    from evidence.sandbox.monitor import Monitor

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_sim_elementwise import KERNEL

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((128, 512), dtype=np.float32) for _ in range(2))
    kernel = load_kernel(KERNEL).chain
    simulate(kernel, a, b, 10)
    events = {"n": 0, "on": False}

    def count(event, args):
        if events["on"]:
            events["n"] += 1

    sys.addaudithook(count)
    events["on"] = True
    cpu = time.process_time()
    simulate(kernel, a, b, iters, keep_trace=False)
    cpu = time.process_time() - cpu
    events["on"] = False
    hook = Monitor("/nonexistent/src/", os.open(os.devnull, os.O_WRONLY), block=True, read_roots=[sys.prefix],
                   write_roots=["/tmp"], withheld=()).hook
    per_event = min(timeit.repeat(lambda: hook("sys._getframe", ()), number=100_000, repeat=5)) / 100_000
    added = events["n"] * per_event
    print(f"audit hook: {events['n']} events in a simulation of {4 * iters} instructions ({cpu * 1e3:.0f} ms CPU), "
          f"{per_event * 1e9:.0f} ns each on the fast path: +{added * 1e3:.1f} ms ({100 * added / cpu:.1f} %)")


def _bare_bwrap(path: str, argv: list[str]) -> list[str]:
    """bwrap with the child's namespaces and read-only binds, without a job folder."""
    config = SandboxConfig()
    args = [path, *bwrap._namespace_args(config), *bwrap._os_args()]
    for folder in bwrap.python_binds():
        args += ["--ro-bind", str(folder), str(folder)]
    return [*args, "--", *argv]


if __name__ == "__main__":
    main()
