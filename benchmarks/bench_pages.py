"""Reviewer pages: how long each page takes to answer over loopback, for drafts with 200 evidence items,
on the first view (nothing of that draft or page cached yet) and warm.

    .venv/bin/python benchmarks/bench_pages.py [--items 200] [--queue 50] [--requests 30] [--rounds 3]

Builds a throw-away service (SQLite) whose drafts are a real draft of examples/softmax-ragged-defect
padded to `--items` evidence items (spread over the kernel's lines, with citations and flags), one per
queued evaluation (`--queue`, each a distinct submission and draft; every third without perf evidence),
`--roofline` distinct drafts of examples/matmul-tiled padded alike (their pages have the roofline plot),
a few reviews, a calibration run of the tests' five-item gold set, a reviewer's scores and an audit of
that set (renamed and injected variants).

First views: `--rounds` times, a fresh `grader serve --workers 0` process over that database (started
by this script, timed until /healthz answers), a new client signs in and opens, once each, the queue,
`--firsts` distinct plain drafts and every roofline draft, a citation of a draft not yet opened, the
calibration run and the audit. Warm: on the last server, every page 3 times and then `--requests`
times. Prints median, p95 and max per page and the ratio to /healthz measured in the same run (the
cost of the HTTP round trip itself), with the load average. Target: every page's p95 under 200 ms,
first views included.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADER_DATA_DIR", tempfile.mkdtemp(prefix="bench-pages-"))

import httpx  # noqa: E402

from evidence.model import Location  # noqa: E402
from grader.consistency import executor  # noqa: E402
from grader.draft import Citation, Draft, Flag  # noqa: E402
from grader.service import audits, calibration, evaluations, review  # noqa: E402
from grader.service.calibration import (  # noqa: E402
    CalibrationRequest,
    ReviewerScoreIn,
    ReviewerScoresRequest,
)
from grader.service.views import CriterionDecision  # noqa: E402
from grader.service.worker import Worker  # noqa: E402
from grader.settings import Settings  # noqa: E402
from grader.store import migrate  # noqa: E402
from grader.store.db import Store, sqlite_url  # noqa: E402
from grader.store.keys import Principal, create_key  # noqa: E402
from tests.grader.consistency.conftest import mini_set  # noqa: E402
from tests.service.test_calibration_api import gold_scores  # noqa: E402
from tests.web.conftest import example_upload  # noqa: E402
from tests.web.test_calibration_pages import InlineExecutor  # noqa: E402

TARGET_S = 0.200
NO_PERF = "# bench: no perf evidence"


def padded(draft: Draft, items: int, kernel_lines: int, *, submission_hash: str, perf: bool = True) -> Draft:
    """The draft of another copy of the submission (`submission_hash`), its evidence bundle padded to
    `items` items (without perf.* items when not `perf`) and more citations per criterion."""
    real = [i for i in draft.evidence.items if perf or not i.kind.startswith("perf.")]
    extra = []
    for n in range(items - len(real)):
        base = real[n % len(real)]
        line = 1 + n % kernel_lines
        extra.append(base.model_copy(update={
            "id": f"{base.kind}:bench:{n}", "title": f"{base.title} (copy {n})",
            "location": Location(file="kernel.py", start_line=line, end_line=line)}))
    bundle = draft.evidence.model_copy(update={"items": tuple(real + extra), "submission_hash": submission_hash})
    criteria = []
    for k, c in enumerate(draft.criteria):
        cites = tuple(Citation(evidence_id=i.id, file="kernel.py", start_line=i.location.start_line,
                               end_line=i.location.end_line) for i in extra[k * 4:k * 4 + 4])
        flags = (Flag(code="contradicts_evidence", message="planted for the benchmark", evidence_id=extra[0].id),) if k == 0 else ()
        criteria.append(c.model_copy(update={"citations": c.citations + cites, "flags": c.flags + flags}))
    return draft.model_copy(update={"evidence": bundle, "criteria": tuple(criteria), "submission_hash": submission_hash})


def variant(n: int, perf: bool = True):  # type: ignore[no-untyped-def]
    """An edit making the n-th distinct copy of an example's kernel (a trailing comment)."""
    return lambda files: files.update({"kernel.py": files["kernel.py"] + f"\n# bench copy {n}\n" + ("" if perf else NO_PERF + "\n")})


def build(store: Store, settings: Settings, items: int, queue: int, rooflines: int) -> dict[str, object]:
    lead, lead_token = create_key(store, name="lee", role="lead")
    rita, _ = create_key(store, name="rita", role="reviewer")
    sam, _ = create_key(store, name="sam", role="submitter")
    who = {k.name: Principal(k.id, k.name, k.role) for k in (lead, rita, sam)}
    real: dict[str, Draft] = {}

    def evaluate(submission, **kwargs):  # type: ignore[no-untyped-def]
        kernel = submission.files["kernel.py"]
        task = submission.manifest.task.id
        if task not in real:  # the real evaluation once per example, then a padded draft per submission
            real[task] = original(submission, **kwargs)
        return padded(real[task], items, kernel.count("\n"), submission_hash=submission.content_hash,
                      perf=NO_PERF not in kernel)

    original = evaluations.evaluate
    evaluations.evaluate = evaluate
    worker = Worker(store, settings, poll_s=0.01)
    ids, plots = [], []
    for n in range(queue):
        manifest, files = example_upload("softmax-ragged-defect", variant(n, perf=n % 3 != 2))
        ids.append(evaluations.submit(store, settings, who["sam"], manifest, files)[0].id)
    for n in range(rooflines):
        manifest, files = example_upload("matmul-tiled", variant(n))
        plots.append(evaluations.submit(store, settings, who["sam"], manifest, files)[0].id)
    worker.run(max_jobs=queue + rooflines)
    evaluations.evaluate = original
    for eid in ids[:10]:
        review.submit_review(store, who["rita"], eid, [
            CriterionDecision(criterion_id="tiling", action="edit", score=2, reason="ragged tail unwritten")])
    executor.LocalExecutor = InlineExecutor  # grade the gold set in this process
    calibration.SETS_ROOT = mini_set().parent
    run = calibration.submit_run(store, settings, who["lee"], CalibrationRequest(set="mini-set", resamples=200))
    worker.run(max_jobs=1)
    calibration.submit_scores(store, settings, who["rita"], ReviewerScoresRequest(
        set="mini-set", scores=[ReviewerScoreIn(**s) for s in gold_scores(mini_set())]))
    audits.AUDIT_SET = mini_set()
    audit = audits.submit_audit(store, settings, who["lee"], audits.AuditRequest(
        set="mini-set", perturbations=["rename", "injection"], resamples=200))
    worker.run(max_jobs=1)
    draft = evaluations.get(store, who["lee"], ids[0]).draft
    return {"ids": ids, "plots": plots, "run": run.id, "audit": audit.id, "token": lead_token, "rita": rita.id,
            "draft": draft}


def serve(port: int, sets_root: str, audit_set: str, database_url: str) -> None:
    """`grader serve --workers 0` (the real command), with the benchmark's gold sets known to the server."""
    from grader.cli import app

    calibration.SETS_ROOT, audits.AUDIT_SET = Path(sets_root), Path(audit_set)
    app(["serve", "--port", str(port), "--workers", "0", "--database-url", database_url])


@contextmanager
def fresh_server(database_url: str):  # type: ignore[no-untyped-def]
    """A new server process; yields its URL and the seconds it took to answer /healthz."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), str(calibration.SETS_ROOT),
                             str(audits.AUDIT_SET), database_url],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # its request log
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.perf_counter() - t0 > 120:
                raise RuntimeError("the server did not start")
            time.sleep(0.05)
        yield url, time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def signed_in(url: str, token: str) -> tuple[httpx.Client, dict[str, float]]:
    client = httpx.Client(base_url=url, timeout=60)
    t0 = time.perf_counter()
    login = client.get("/ui/login")
    t1 = time.perf_counter()
    csrf = login.text.split('name="csrf" value="')[1].split('"')[0]
    assert client.post("/ui/login", data={"token": token, "csrf": csrf}).status_code == 303
    return client, {"sign-in page": t1 - t0, "sign-in (POST)": time.perf_counter() - t1}


def once(client: httpx.Client, path: str) -> float:
    t0 = time.perf_counter()
    response = client.get(path)
    elapsed = time.perf_counter() - t0
    assert response.status_code == 200, (path, response.status_code)
    return elapsed


def first_views(client: httpx.Client, made: dict, firsts: int, items: int) -> dict[str, float | list[float]]:
    """The order a reviewer might take on a fresh server: the queue, drafts, a citation, calibration, an audit."""
    out: dict[str, float | list[float]] = {"review queue (50 rows)": once(client, "/ui/queue")}
    plain = made["ids"][:firsts]
    out[f"draft page ({items} items)"] = [once(client, f"/ui/evaluations/{eid}") for eid in plain]
    out[f"draft page, roofline ({items})"] = [once(client, f"/ui/evaluations/{eid}") for eid in made["plots"]]
    out["citation: source beside item"] = once(
        client, f"/ui/evaluations/{made['ids'][firsts]}/source/kernel.py?lines=13-13&evidence=nki.loop:bench:12")
    out["calibration run"] = once(client, f"/ui/calibration/{made['run']}")
    out["audit: drift and stability"] = once(client, f"/ui/audits/{made['audit']}")
    return out


def timed(client: httpx.Client, path: str, n: int) -> list[float]:
    for _ in range(3):  # warm caches (templates, highlighted sources)
        once(client, path)
    return [once(client, path) for _ in range(n)]


def p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def row(name: str, times: list[float], baseline: float) -> tuple[str, float]:
    med, worst = statistics.median(times), p95(times)
    return (f"{name:34} {len(times):4} {med * 1e3:7.1f}ms {worst * 1e3:7.1f}ms {max(times) * 1e3:7.1f}ms "
            f"{med / baseline:9.1f}x  {'ok' if worst < TARGET_S else 'OVER'}"), worst


HEADER = f"{'page':34} {'n':>4} {'median':>8} {'p95':>8} {'max':>8} {'x healthz':>10}  target p95 < {TARGET_S * 1e3:.0f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--queue", type=int, default=50)
    ap.add_argument("--roofline", type=int, default=6, help="distinct matmul drafts (with the roofline plot)")
    ap.add_argument("--firsts", type=int, default=10, help="distinct plain drafts opened on each fresh server")
    ap.add_argument("--rounds", type=int, default=3, help="fresh server processes")
    ap.add_argument("--requests", type=int, default=30)
    args = ap.parse_args()
    tmp = Path(os.environ["GRADER_DATA_DIR"])
    database_url = sqlite_url(tmp / "grader.db")
    store = Store(database_url)
    migrate.upgrade(store)
    settings = Settings(data_dir=tmp, drafter="rules")
    print(f"building ({load()})", flush=True)
    made = build(store, settings, args.items, args.queue, args.roofline)
    eid = made["ids"][0]
    draft = made["draft"]
    print(f"draft {eid[:12]}: {len(draft.evidence.items)} evidence items, "
          f"{sum(len(c.citations) for c in draft.criteria)} citations; {args.queue} distinct queued drafts "
          f"(every third without perf evidence), {args.roofline} distinct roofline drafts\n", flush=True)
    firsts: dict[str, list[float]] = {}
    starts, baseline = [], 0.0
    for n in range(args.rounds):
        with fresh_server(database_url) as (url, started):
            starts.append(started)
            client, signing = signed_in(url, made["token"])
            try:
                for name, t in (signing | first_views(client, made, args.firsts, args.items)).items():
                    firsts.setdefault(name, []).extend(t if isinstance(t, list) else [t])
                print(f"fresh server {n + 1}: ready in {started:.2f} s; first views done ({load()})", flush=True)
                if n == args.rounds - 1:
                    warm = warm_views(client, url, made, args)
                    baseline = statistics.median(timed(client, "/healthz", args.requests))
            finally:
                client.close()
    worst = 0.0
    print(f"\nFIRST VIEWS over {args.rounds} fresh servers (ready in {min(starts):.2f}-{max(starts):.2f} s); "
          f"/healthz median {baseline * 1e3:.1f} ms\n{HEADER}")
    for name, times in firsts.items():
        line, w = row(name, times, baseline)
        worst = max(worst, w)
        print(line)
    print(f"\nWARM: 3 warm-ups then {args.requests} requests per page\n{HEADER}")
    for name, times in warm.items():
        line, w = row(name, times, baseline)
        worst = max(worst, w)
        print(line)
    print(f"\nworst p95 {worst * 1e3:.1f} ms: {'every page under' if worst < TARGET_S else 'NOT every page under'} "
          f"{TARGET_S * 1e3:.0f} ms, first views included ({load()})")
    store.dispose()


def warm_views(client: httpx.Client, url: str, made: dict, args: argparse.Namespace) -> dict[str, list[float]]:
    eid = made["ids"][0]
    pages = {
        "review queue (50 rows)": "/ui/queue",
        "queue, filtered": "/ui/queue?flag=contradicts_evidence&calibrated=no",
        f"draft page ({args.items} items)": f"/ui/evaluations/{eid}",
        f"draft page, roofline ({args.items})": f"/ui/evaluations/{made['plots'][0]}",
        "citation: source beside item": f"/ui/evaluations/{eid}/source/kernel.py?lines=13-13&evidence=nki.loop:bench:12",
        "audit log": "/ui/audit-log",
        "audit log, one subject": f"/ui/audit-log?subject=job:{eid}",
        "calibration runs": "/ui/calibration",
        "calibration run": f"/ui/calibration/{made['run']}",
        "reviewer certification": f"/ui/reviewers/{made['rita']}?set=mini-set",
        "audits": "/ui/audits",
        "audit: drift and stability": f"/ui/audits/{made['audit']}",
    }
    with httpx.Client(base_url=url, timeout=60) as anonymous:  # signed in, the sign-in page redirects
        out = {"sign-in": timed(anonymous, "/ui/login", args.requests)}
    return out | {name: timed(client, path, args.requests) for name, path in pages.items()}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve(int(sys.argv[2]), *sys.argv[3:6])
    else:
        main()
