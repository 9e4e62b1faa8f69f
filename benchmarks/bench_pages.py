"""Reviewer pages: how long each page takes to answer over loopback, for a draft with 200 evidence items.

    .venv/bin/python benchmarks/bench_pages.py [--items 200] [--queue 50] [--requests 30]

Builds a throw-away service (SQLite) whose drafts are a real draft of examples/softmax-ragged-defect
padded to `--items` evidence items (spread over the kernel's lines, with citations and flags),
`--queue` evaluations in the queue, one draft of examples/matmul-tiled padded alike (its page has the
roofline plot), a few reviews, a calibration run of the tests' five-item gold set, a reviewer's scores
and an audit of that set (renamed and injected variants); then requests every page through a live
uvicorn server as a signed-in lead. Prints median, p95 and max per page, and the ratio to /healthz
measured in the same run (the cost of the HTTP round trip itself), and the first view of each draft
page (before anything of that draft is cached; the roofline's first view includes matplotlib).
Target: every page's p95 under 200 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADER_DATA_DIR", tempfile.mkdtemp(prefix="bench-pages-"))

import httpx  # noqa: E402

from evidence.model import Location  # noqa: E402
from grader.api.app import create_app  # noqa: E402
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
from tests.web.browser import LiveServer  # noqa: E402
from tests.web.conftest import example_upload  # noqa: E402
from tests.web.test_calibration_pages import InlineExecutor  # noqa: E402

TARGET_S = 0.200


def padded(draft: Draft, items: int, kernel_lines: int) -> Draft:
    """The draft with its evidence bundle padded to `items` items and more citations per criterion."""
    real = list(draft.evidence.items)
    extra = []
    for n in range(items - len(real)):
        base = real[n % len(real)]
        line = 1 + n % kernel_lines
        extra.append(base.model_copy(update={
            "id": f"{base.kind}:bench:{n}", "title": f"{base.title} (copy {n})",
            "location": Location(file="kernel.py", start_line=line, end_line=line)}))
    bundle = draft.evidence.model_copy(update={"items": tuple(real + extra)})
    criteria = []
    for k, c in enumerate(draft.criteria):
        cites = tuple(Citation(evidence_id=i.id, file="kernel.py", start_line=i.location.start_line,
                               end_line=i.location.end_line) for i in extra[k * 4:k * 4 + 4])
        flags = (Flag(code="contradicts_evidence", message="planted for the benchmark", evidence_id=extra[0].id),) if k == 0 else ()
        criteria.append(c.model_copy(update={"citations": c.citations + cites, "flags": c.flags + flags}))
    return draft.model_copy(update={"evidence": bundle, "criteria": tuple(criteria)})


def build(store: Store, settings: Settings, items: int, queue: int) -> dict[str, object]:
    lead, lead_token = create_key(store, name="lee", role="lead")
    rita, _ = create_key(store, name="rita", role="reviewer")
    sam, _ = create_key(store, name="sam", role="submitter")
    who = {k.name: Principal(k.id, k.name, k.role) for k in (lead, rita, sam)}
    manifest, files = example_upload("softmax-ragged-defect")
    cache: dict[str, Draft] = {}

    def evaluate(submission, **kwargs):  # type: ignore[no-untyped-def]
        if submission.content_hash not in cache:
            cache[submission.content_hash] = padded(original(submission, **kwargs), items,
                                                        submission.files["kernel.py"].count("\n"))
        return cache[submission.content_hash]

    original = evaluations.evaluate
    evaluations.evaluate = evaluate  # the real draft once, then the padded copy for every queued evaluation
    worker = Worker(store, settings, poll_s=0.01)
    ids = []
    for n in range(queue):
        view, _ = evaluations.submit(store, settings, who["sam"], manifest, files)
        ids.append(view.id)
    worker.run(max_jobs=queue)
    manifest, files = example_upload("matmul-tiled")
    roofline, _ = evaluations.submit(store, settings, who["sam"], manifest, files)
    worker.run(max_jobs=1)
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
    return {"ids": ids, "roofline": roofline.id, "run": run.id, "audit": audit.id, "token": lead_token, "rita": rita.id, "draft": draft}


def timed(client: httpx.Client, path: str, n: int) -> list[float]:
    for _ in range(3):  # warm caches (templates, highlighted sources)
        assert client.get(path).status_code == 200, path
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        response = client.get(path)
        out.append(time.perf_counter() - t0)
        assert response.status_code == 200, (path, response.status_code)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--queue", type=int, default=50)
    ap.add_argument("--requests", type=int, default=30)
    args = ap.parse_args()
    tmp = Path(os.environ["GRADER_DATA_DIR"])
    store = Store(sqlite_url(tmp / "grader.db"))
    migrate.upgrade(store)
    settings = Settings(data_dir=tmp, drafter="rules")
    made = build(store, settings, args.items, args.queue)
    eid = made["ids"][0]
    pages = {
        "review queue (50 rows)": "/ui/queue",
        "queue, filtered": "/ui/queue?flag=contradicts_evidence&calibrated=no",
        f"draft page ({args.items} items)": f"/ui/evaluations/{eid}",
        f"draft page, roofline ({args.items})": f"/ui/evaluations/{made['roofline']}",
        "citation: source beside item": f"/ui/evaluations/{eid}/source/kernel.py?lines=13-13&evidence=nki.loop:bench:12",
        "audit log": "/ui/audit-log",
        "audit log, one subject": f"/ui/audit-log?subject=job:{eid}",
        "calibration runs": "/ui/calibration",
        "calibration run": f"/ui/calibration/{made['run']}",
        "reviewer certification": f"/ui/reviewers/{made['rita']}?set=mini-set",
        "audits": "/ui/audits",
        "audit: drift and stability": f"/ui/audits/{made['audit']}",
    }
    with LiveServer(create_app(settings, store)) as server, httpx.Client(base_url=server.url, timeout=60) as client, \
            httpx.Client(base_url=server.url, timeout=60) as anonymous:
        login = client.get("/ui/login")
        csrf = login.text.split('name="csrf" value="')[1].split('"')[0]
        assert client.post("/ui/login", data={"token": made["token"], "csrf": csrf}).status_code == 303
        baseline = statistics.median(timed(client, "/healthz", args.requests))
        draft = made["draft"]
        print(f"draft {eid[:12]}: {len(draft.evidence.items)} evidence items, "
              f"{sum(len(c.citations) for c in draft.criteria)} citations; /healthz median {baseline * 1e3:.1f} ms\n")
        for name in (f"draft page ({args.items} items)", f"draft page, roofline ({args.items})"):
            t0 = time.perf_counter()
            assert client.get(pages[name]).status_code == 200
            print(f"first view of the {name}: {(time.perf_counter() - t0) * 1e3:.0f} ms")
        print()
        print(f"{'page':34} {'median':>8} {'p95':>8} {'max':>8} {'x healthz':>10}  target p95 < {TARGET_S * 1e3:.0f} ms")
        worst = 0.0
        signed_in = {name: (client, path) for name, path in pages.items()}
        for name, (who, path) in ({"sign-in": (anonymous, "/ui/login")} | signed_in).items():  # signed in, it redirects
            times = sorted(timed(who, path, args.requests))
            p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
            worst = max(worst, p95)
            med = statistics.median(times)
            print(f"{name:34} {med * 1e3:7.1f}ms {p95 * 1e3:7.1f}ms {times[-1] * 1e3:7.1f}ms {med / baseline:9.1f}x  "
                  f"{'ok' if p95 < TARGET_S else 'OVER'}")
    print(f"\nworst p95 {worst * 1e3:.1f} ms: {'every page under' if worst < TARGET_S else 'NOT every page under'} "
          f"{TARGET_S * 1e3:.0f} ms")
    store.dispose()


if __name__ == "__main__":
    main()
