"""Regenerate the screenshots of the reviewer pages in docs/screenshots/.

    .venv/bin/python docs/screenshots/regenerate.py

Builds a throw-away service (SQLite in a temporary folder) with the README's examples drafted by the
rules drafter and one drafted by a model (the loopback fake OpenAI server, whose scores break the
rubric's caps, so the guard flags them), a calibration run of the tests' five-item gold set, a
reviewer's calibration scores, a few review decisions and a grader-consistency audit of the gold set
(renamed and injected variants, drift against the calibration run); then drives Debian's Chromium through
every page and saves one PNG per page. Offline; takes a few minutes on two cores.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADER_DATA_DIR", tempfile.mkdtemp(prefix="grader-shots-"))
os.environ.setdefault("OPENAI_API_KEY", "sk-loopback")

from grader.api.app import create_app  # noqa: E402
from grader.service import audits, calibration, evaluations, review  # noqa: E402
from grader.service.calibration import (  # noqa: E402
    CalibrationRequest,
    ReviewerScoreIn,
    ReviewerScoresRequest,
)
from grader.service.evaluations import EvaluationOptions  # noqa: E402
from grader.service.views import CriterionDecision  # noqa: E402
from grader.service.worker import Worker  # noqa: E402
from grader.settings import Settings  # noqa: E402
from grader.store import migrate  # noqa: E402
from grader.store.db import Store, sqlite_url  # noqa: E402
from grader.store.keys import Principal, create_key  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, verdict  # noqa: E402
from tests.grader.consistency.conftest import mini_set  # noqa: E402
from tests.service.test_calibration_api import gold_scores  # noqa: E402
from tests.web.browser import LiveServer, chromium  # noqa: E402
from tests.web.conftest import example_upload  # noqa: E402

EVIDENCE_LINE = re.compile(r"^\[([^\]\s]+)\] \S+ \| severity", re.M)
VIEWPORT = {"width": 1280, "height": 860}


def model_reply(body: dict) -> object:
    prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
    first = EVIDENCE_LINE.findall(prompt)[0]
    return verdict(4, first, rationale=f"The kernel handles this well; see [{first}].", confidence=0.7)


def principal(key) -> Principal:  # type: ignore[no-untyped-def]
    return Principal(key.id, key.name, key.role)


def build(store: Store, settings: Settings, model_url: str) -> dict[str, object]:
    admin, _ = create_key(store, name="alice", role="admin")
    sam, _ = create_key(store, name="sam", role="submitter")
    rita, rita_token = create_key(store, name="rita", role="reviewer")
    lee, lee_token = create_key(store, name="lee", role="lead")
    calibration.SETS_ROOT = mini_set().parent
    worker = Worker(store, settings, poll_s=0.01)
    run = calibration.submit_run(store, settings, principal(lee), CalibrationRequest(set="mini-set", resamples=200))
    worker.run(max_jobs=1)
    ids = {}
    for name in ("softmax-ragged-defect", "matmul-tiled", "rmsnorm-cuda-port"):
        manifest, files = example_upload(name)
        view, _ = evaluations.submit(store, settings, principal(sam), manifest, files)
        worker.run(max_jobs=1)
        ids[name] = view.id
    manifest, files = example_upload("softmax-ragged-defect", lambda f: f.update({"kernel.py": f["kernel.py"] + "\n"}))
    view, _ = evaluations.submit(store, settings, principal(sam), manifest, files,
                                 EvaluationOptions(drafter="llm", model="openai/fake-judge"))
    worker.run(max_jobs=1)
    ids["llm"] = view.id
    review.submit_review(store, principal(rita), ids["matmul-tiled"], [
        CriterionDecision(criterion_id="performance", action="edit", score=4, reason="rhs block hoisted; PSUM += is right")])
    blocked = [s.criterion_id for s in evaluations.get(store, principal(rita), ids["matmul-tiled"]).criteria
               if s.blockers and not s.acknowledged]  # criteria whose grader failed its gates on the gold set
    review.submit_review(store, principal(rita), ids["matmul-tiled"], [
        CriterionDecision(criterion_id=c, action="accept", reason="checked by hand against the evidence") for c in blocked])
    review.sign_off(store, principal(rita), ids["matmul-tiled"], "checked against the trace")
    review.submit_review(store, principal(rita), ids["softmax-ragged-defect"], [
        CriterionDecision(criterion_id="tiling", action="edit", score=2, reason="the last 44 rows are never written")])
    scores = gold_scores(mini_set())
    for s in scores[::7]:  # a reviewer who mostly agrees with gold
        if isinstance(s["score"], int):
            s["score"] = max(1, s["score"] - 1)
    calibration.submit_scores(store, settings, principal(rita), ReviewerScoresRequest(
        set="mini-set", scores=[ReviewerScoreIn(**s) for s in scores]))
    audits.AUDIT_SET = mini_set()
    audit = audits.submit_audit(store, settings, principal(lee), audits.AuditRequest(
        set="mini-set", against=run.id, perturbations=["rename", "injection"], resamples=200))
    worker.run(max_jobs=1)
    return {"ids": ids, "run": run.id, "audit": audit.id, "rita": (rita.id, rita_token), "lee": lee_token}


def sign_in(page, base: str, token: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(base + "/ui/login")
    page.get_by_label("API key").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/ui/queue"))


def shoot(page, name: str, *, full: bool = False) -> None:  # type: ignore[no-untyped-def]
    path = OUT / f"{name}.png"
    page.screenshot(path=str(path), full_page=full)
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> None:
    tmp = Path(os.environ["GRADER_DATA_DIR"])
    with FakeOpenAIServer(default=model_reply) as model:
        store = Store(sqlite_url(tmp / "grader.db"))
        migrate.upgrade(store)
        settings = Settings(data_dir=tmp, drafter="rules", api_base=model.base_url, use_cache=False,
                            allowed_models="openai/fake-judge")
        made = build(store, settings, model.base_url)
        ids, rita_token = made["ids"], made["rita"][1]
        with LiveServer(create_app(settings, store)) as server, chromium() as browser:
            base = server.url
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(base + "/")
            shoot(page, "01-sign-in")
            sign_in(page, base, rita_token)
            shoot(page, "02-review-queue")
            page.goto(f"{base}/ui/evaluations/{ids['llm']}")
            shoot(page, "03-draft-summary")
            page.goto(f"{base}/ui/evaluations/{ids['llm']}#crit-kernel_correctness")
            shoot(page, "04-flagged-criterion-and-review-forms")
            page.locator("#crit-kernel_correctness ol.citations a").first.click()
            shoot(page, "05-citation-source-beside-evidence")
            page.goto(f"{base}/ui/evaluations/{ids['softmax-ragged-defect']}#simulator")
            shoot(page, "06-simulator-findings-and-numerics")
            page.goto(f"{base}/ui/evaluations/{ids['rmsnorm-cuda-port']}#evidence")
            shoot(page, "07-evidence-by-collector")
            page.goto(f"{base}/ui/evaluations/{ids['matmul-tiled']}")
            shoot(page, "08-signed-off-draft")
            page.goto(f"{base}/ui/evaluations/{ids['matmul-tiled']}#performance")
            shoot(page, "08b-performance-and-roofline")
            calibration.reviewer_calibration(store, settings, Principal(made["rita"][0], "rita", "reviewer"), made["rita"][0], "mini-set")  # warm the cache
            page.goto(f"{base}/ui/reviewers/me?set=mini-set")
            shoot(page, "09-reviewer-certification")
            page.get_by_role("button", name="Sign out").click()
            sign_in(page, base, made["lee"])
            page.goto(f"{base}/ui/calibration/{made['run']}")
            shoot(page, "10-calibration-run")
            page.locator(".heatmaps").screenshot(path=str(OUT / "10b-confusion-matrices.png"))
            print("wrote docs/screenshots/10b-confusion-matrices.png")
            page.goto(f"{base}/ui/audit-log")
            shoot(page, "11-audit-log")
            page.goto(f"{base}/ui/audits/{made['audit']}")
            shoot(page, "13-audit-and-drift", full=True)
            report = tmp / "draft.html"
            from grader.service.evaluations import get_submission_of
            from grader.web.standalone import render_standalone

            lead = Principal("local", "local", "admin")
            view = evaluations.get(store, lead, ids["softmax-ragged-defect"])
            sub = get_submission_of(store, lead, ids["softmax-ragged-defect"])
            report.write_text(render_standalone(view.draft, dict(sub.files), task_title=sub.manifest.task.title))
            page.goto(report.as_uri() + "#cite-kernel_correctness-3")
            shoot(page, "12-standalone-report-citation")
        store.dispose()


if __name__ == "__main__":
    main()
