"""Service load: N concurrent submissions of the examples (rules drafter) to `grader serve` on loopback,
each polled until its draft is finished; throughput, p50/p95 latency to a finished draft, errors.

Runs against the embedded SQLite store and a throw-away PostgreSQL. The baseline, measured in the same
run, is the same evaluations drafted serially in this process (no HTTP, no database, no queue): the
ratio says how much of the machine's drafting capacity the service delivers under load.

    .venv/bin/python benchmarks/bench_service.py [--n 200] [--workers 2] [--backends sqlite,postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from grader.evaluate import evaluate  # noqa: E402
from grader.settings import Settings  # noqa: E402
from grader.store import migrate  # noqa: E402
from grader.store.db import Store, sqlite_url  # noqa: E402
from grader.store.keys import create_key  # noqa: E402
from tests.fakes.postgres import PostgresUnavailable, TempPostgres, _free_port  # noqa: E402

EXAMPLES = ["matmul-tiled", "softmax-ragged-defect", "rmsnorm-cuda-port"]


def body(name: str) -> dict:
    folder = ROOT / "examples" / name
    files = {p.name: p.read_text() for p in folder.iterdir() if p.is_file() and p.name != "submission.toml"}
    return {"manifest": (folder / "submission.toml").read_text(), "files": files}


def baseline(n: int) -> float:
    """Seconds per evaluation, drafted serially in-process."""
    settings = Settings(drafter="rules")
    evaluate(ROOT / "examples" / EXAMPLES[0], settings=settings)  # warm imports
    start = time.perf_counter()
    for i in range(n):
        evaluate(ROOT / "examples" / EXAMPLES[i % 3], settings=settings)
    return (time.perf_counter() - start) / n


def start_server(url: str, data_dir: Path, workers: int) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "GRADER_DATABASE_URL": url, "GRADER_DATA_DIR": str(data_dir), "GRADER_DRAFTER": "rules"}
    log = open(data_dir / "serve.log", "wb")  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen([sys.executable, "-m", "grader.cli", "serve", "--port", str(port), "--workers", str(workers)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"server did not start; see {data_dir / 'serve.log'}")


async def drive(base: str, token: str, n: int, poll_s: float) -> tuple[float, list[float], Counter]:
    payloads = [body(name) for name in EXAMPLES]
    retries = [0]
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=120,
                                 limits=limits) as client:
        async def call(method: str, url: str, **kw: object) -> httpx.Response:
            # Transport errors are retried (a POST safely: it carries an Idempotency-Key) and counted.
            for attempt in range(3):
                try:
                    return await client.request(method, url, **kw)
                except httpx.TransportError:
                    retries[0] += 1
                    if attempt == 2:
                        raise
                    await asyncio.sleep(0.5)
            raise AssertionError("unreachable")

        async def one(i: int) -> float | str:
            start = time.perf_counter()
            try:
                r = await call("POST", "/v1/evaluations", json=payloads[i % 3], headers={"Idempotency-Key": f"bench-{i}"})
                if r.status_code != 202:
                    return f"POST {r.status_code}: {r.text[:120]}"
                location = r.headers["location"]
                while True:
                    await asyncio.sleep(poll_s)
                    g = await call("GET", location)
                    if g.status_code != 200:
                        return f"GET {g.status_code}: {g.text[:120]}"
                    body = g.json()
                    if body["state"] == "done":
                        return time.perf_counter() - start
                    if body["state"] == "failed":
                        return f"job failed: {body['error']}"
            except httpx.HTTPError as exc:
                return f"{type(exc).__name__}"

        start = time.perf_counter()
        results = await asyncio.gather(*(one(i) for i in range(n)))
        wall = time.perf_counter() - start
    latencies = sorted(r for r in results if isinstance(r, float))
    errors = Counter(r for r in results if isinstance(r, str))
    if retries[0]:
        errors[f"(not an error) transport errors retried: {retries[0]}"] = 0
    return wall, latencies, errors


def run_backend(name: str, url: str, n: int, workers: int, poll_s: float) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"bench-service-{name}-") as tmp:
        store = Store(url)
        migrate.upgrade(store)
        _, token = create_key(store, name="bench", role="submitter")
        store.dispose()
        proc, base = start_server(url, Path(tmp), workers)
        try:
            wall, latencies, errors = asyncio.run(drive(base, token, n, poll_s))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=120)
    q = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else [float("nan")] * 19
    return {"backend": name, "wall": wall, "throughput": len(latencies) / wall, "p50": statistics.median(latencies),
            "p95": q[18], "errors": sum(errors.values()), "kinds": errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--poll", type=float, default=1.0, help="client poll interval (s)")
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()

    per_eval = baseline(6)
    print(f"baseline: {per_eval:.2f} s per evaluation drafted serially in-process ({1 / per_eval:.2f}/s)")
    rows = []
    for backend in args.backends.split(","):
        if backend == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                rows.append(run_backend("sqlite", sqlite_url(Path(tmp) / "grader.db"), args.n, args.workers, args.poll))
        else:
            try:
                pg = TempPostgres().start()
            except PostgresUnavailable as exc:
                print(f"postgres: skipped ({exc})")
                continue
            try:
                rows.append(run_backend("postgres", pg.create_database(), args.n, args.workers, args.poll))
            finally:
                pg.stop()
    print(f"\n{args.n} concurrent submissions, {args.workers} workers, {os.cpu_count()} cores, client poll {args.poll} s")
    print(f"{'backend':<10}{'wall s':>9}{'evals/s':>9}{'vs serial':>11}{'p50 s':>8}{'p95 s':>8}{'errors':>8}")
    for r in rows:
        print(f"{r['backend']:<10}{r['wall']:>9.1f}{r['throughput']:>9.2f}{r['throughput'] * per_eval:>10.2f}x"
              f"{r['p50']:>8.1f}{r['p95']:>8.1f}{r['errors']:>8}")
    for r in rows:
        for kind, count in r["kinds"].most_common(6):
            print(f"  {r['backend']} {'error x' + str(count) + ': ' if count else ''}{kind}")


if __name__ == "__main__":
    main()
