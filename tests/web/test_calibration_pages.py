"""Calibration pages: start a run from the page (a durable job, as POST /v1/calibration-runs), read
its metrics, gates, confusion tables and disagreements, open the full report, and see a reviewer's
certification (their own; leads: anyone's)."""

from __future__ import annotations

import pytest

import grader.evaluate
from grader.consistency import executor
from grader.service import calibration
from grader.service.worker import Worker
from tests.grader.consistency.conftest import mini_set
from tests.service.test_calibration_api import gold_scores
from tests.web.conftest import cached_evaluate, csrf


class InlineExecutor:
    """Grades in this process, where the session's draft cache applies (the service's own tests run
    the spawned process pool; here only the pages are under test)."""

    name = "inline"

    def __init__(self, workers: int = 1) -> None:
        self.workers = 1

    def map(self, fn, tasks, on_done=None):  # type: ignore[no-untyped-def]
        results = [fn(t) for t in tasks]
        for i, r in enumerate(results):
            if on_done:
                on_done(i, r)
        return results


@pytest.fixture
def sets(monkeypatch):  # type: ignore[no-untyped-def]
    root = mini_set()
    monkeypatch.setattr(calibration, "SETS_ROOT", root.parent)
    monkeypatch.setattr(executor, "LocalExecutor", InlineExecutor)
    monkeypatch.setattr(grader.evaluate, "evaluate", cached_evaluate)
    return root


@pytest.mark.slow
def test_calibration_run_and_certification_pages(web, sets):
    lead = web.sign_in("lead")
    page = lead.get("/ui/calibration")
    assert page.status_code == 200 and "No calibration run yet." in page.text and "<option>mini-set</option>" in page.text
    bad = lead.post("/ui/calibration", data={"csrf": csrf(page.text), "set": "../etc"})
    assert bad.status_code == 422 and "unknown calibration set" in bad.text
    started = lead.post("/ui/calibration", data={"csrf": csrf(page.text), "set": "mini-set", "drafter": "rules",
                                                  "resamples": "50"})
    assert started.status_code == 303
    run_url = started.headers["location"]
    queued = lead.get(run_url).text
    assert "is <b>queued</b>" in queued and 'http-equiv="refresh"' in queued
    Worker(web.store, web.settings, poll_s=0.01).run(max_jobs=1)

    html = lead.get(run_url).text
    assert "Calibration of the rules drafter" in html and "mini-set" in html
    assert 'id="heat-kernel_correctness"' in html and 'id="heat-overall"' in html
    assert "QWK [95% CI]" in html and ("Every gate passes" in html or "fail their gates" in html)
    report = lead.get(run_url + "/report")
    assert report.status_code == 200 and "style-src 'unsafe-inline'" in report.headers["content-security-policy"]
    assert "script-src" not in report.headers["content-security-policy"] and "<img" in report.text
    listing = lead.get("/ui/calibration").text
    assert run_url.rsplit("/", 1)[1][:12] in listing
    # The audit log leads from the run's job entries and its saved report to the run's page.
    log = lead.get("/ui/audit-log").text
    assert log.count(f'href="{run_url}"') >= 4  # job.queued, job.started, calibration.saved, job.done

    # A reviewer's certification: their scores (as gold) beside the newest run of the set.
    reviewer = web.sign_in("reviewer")
    none_yet = reviewer.get("/ui/reviewers/me", follow_redirects=True).text
    assert "has no scores for set" in none_yet
    auth = {"Authorization": f"Bearer {web.keys['reviewer'][1]}"}
    stored = web.client().post("/v1/reviewer-scores", headers=auth, json={"set": "mini-set", "scores": gold_scores(sets)})
    assert stored.status_code == 200
    mine = reviewer.get(f"/ui/reviewers/{web.keys['reviewer'][0].id}?set=mini-set").text
    assert "Certification of reviewer" in mine and "Certified for" in mine and "certified</span>" in mine
    # The bootstrap behind it runs once per reviewer, set, run and version of the scores.
    me = web.keys["reviewer"][0]
    first = calibration.reviewer_calibration(web.store, web.settings, me, me.id, "mini-set")
    assert calibration.reviewer_calibration(web.store, web.settings, me, me.name, "mini-set") is first
    web.client().post("/v1/reviewer-scores", headers=auth, json={"set": "mini-set", "scores": gold_scores(sets)[:1]})
    assert calibration.reviewer_calibration(web.store, web.settings, me, me.id, "mini-set") is not first
    assert reviewer.get(f"/ui/reviewers/{web.keys['reviewer2'][0].id}?set=mini-set").status_code == 403
    assert lead.get(f"/ui/reviewers/{web.keys['reviewer'][0].id}?set=mini-set").status_code == 200
    assert lead.get("/ui/reviewers/nobody").status_code == 404
    assert "reviewer2" in lead.get("/ui/reviewers").text


def test_heat_rows_shade_by_count():
    from grader.web.pages.calibration import heat_rows

    class Agreement:
        confusion = [[0, 2], [1, 4]]

    class Row:
        agreement = Agreement()

    assert heat_rows(Row()) == [[(0, 0), (2, 2)], [(1, 1), (4, 4)]]  # type: ignore[arg-type]
