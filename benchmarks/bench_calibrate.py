"""Wall time of a whole calibration run (rules drafter) with 1 and with 2 local workers, as a ratio.

Both runs grade the same set through the same executor code path (a spawned process pool); the
statistics (bootstrap included) are computed once per run in the parent and counted in both. The
reports must be identical apart from timing fields, which the benchmark checks before printing.

    .venv/bin/python benchmarks/bench_calibrate.py [SET] [--resamples 1000] [--executor local|ray]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.consistency.calibrate import run_calibration  # noqa: E402
from grader.consistency.executor import make_executor  # noqa: E402
from grader.settings import Settings  # noqa: E402


def timed(set_path: Path, workers: int, executor: str, resamples: int):
    ex = make_executor(executor, workers)
    start = time.perf_counter()
    report = run_calibration(set_path, settings=Settings(drafter="rules"), executor=ex, resamples=resamples)
    elapsed = time.perf_counter() - start
    if hasattr(ex, "shutdown"):
        ex.shutdown()
    return elapsed, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("set", nargs="?", default=str(ROOT / "evals" / "calibration" / "nki-review-v1"))
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--executor", default="local")
    args = parser.parse_args()
    one, r1 = timed(Path(args.set), 1, args.executor, args.resamples)
    two, r2 = timed(Path(args.set), 2, args.executor, args.resamples)
    if r1.comparable() != r2.comparable():
        sys.exit("reports differ between 1 and 2 workers")
    graded = sum(i.duration_s for i in r1.items)
    print(f"{r1.set.name}: {r1.set.items} items, rules drafter, {args.resamples} bootstrap resamples, executor {args.executor}")
    print(f"1 worker:  {one:6.1f} s (grading {graded:.1f} s of item time)")
    print(f"2 workers: {two:6.1f} s")
    print(f"ratio 1/2 workers: {one / two:.2f}x (2 shared cores; identical reports)")


if __name__ == "__main__":
    main()
