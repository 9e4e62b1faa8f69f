"""The HTML calibration report: one self-contained file, escaped, with every part a reviewer needs."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from grader.consistency.calibrate import measure
from grader.consistency.report import CalibrationReport, ItemOutcome, SetRef
from grader.draft import Citation, DrafterInfo, RubricRef
from grader.epoch import grader_epoch
from grader.reports.calibration_html import render_calibration_html
from grader.rubric import load_rubric

RUBRIC = load_rubric("nki-kernel-review")


def _report() -> CalibrationReport:
    outcomes = []
    for i in range(6):
        for c in RUBRIC.criteria:
            gold = 1 + i % 5
            score = gold if c.id != "tiling" else 6 - gold
            outcomes.append(ItemOutcome(
                item=f"item-{i}", criterion_id=c.id, gold=gold, gold_rationale=f"gold says <script>alert({i})</script>",
                status="scored", score=score, rationale=f"draft rationale {i} & more",
                citations=(Citation(evidence_id=f"nki.kernel:kernel.py:{i + 3}", file="kernel.py", start_line=i + 3, end_line=i + 5),),
                flags=("contradicts_evidence",) if i == 0 else ()))
    per, overall = measure(outcomes, RUBRIC, None, resamples=50, seed=1)
    return CalibrationReport(
        id="cal-test", created_at="2026-01-01T00:00:00+00:00", set=SetRef(name="hand-set", path="/x", hash="sha256:0", items=6),
        rubric=RubricRef(id=RUBRIC.id, version=RUBRIC.version, hash=RUBRIC.content_hash), epoch=grader_epoch(RUBRIC),
        drafter=DrafterInfo(name="rules", version="1"), resamples=50, gates=RUBRIC.gates,
        criteria=tuple(per), overall=overall, outcomes=tuple(outcomes), items=())


@pytest.fixture(scope="module")
def html():
    return render_calibration_html(_report())


def test_self_contained_and_escaped(html):
    assert html.startswith("<!doctype html>")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)  # nothing fetched from anywhere
    assert html.count('src="data:image/png;base64,') == 1
    assert "<script>" not in html and "&lt;script&gt;alert(0)&lt;/script&gt;" in html


def test_gates_metrics_and_disagreements_are_shown(html):
    assert "tiling</b>: failed gate: QWK -" in html  # the mirrored criterion fails, named in the banner
    assert "1 of 10 criteria fail their gates" in html
    assert html.count("calibrated</span>") == 9  # the other nine criteria
    assert "and so does the pooled row" in html  # 4 of 60 pooled pairs are 2+ levels apart: adjacent < 95%
    assert "[1.00, 1.00]" in html  # CIs next to the figures
    assert "item-0 · tiling · draft 5 vs gold 1 (4 levels above gold)" in html
    assert "nki.kernel:kernel.py:3</code> — kernel.py:3-5" in html  # citations next to the gold rationale
    assert "flags: contradicts_evidence" in html


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_chromium_renders_the_report(tmp_path, html):
    page = tmp_path / "report.html"
    page.write_text(html)
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", f"--screenshot={shot}",
                    "--window-size=1400,2000", page.as_uri()], check=True, capture_output=True, timeout=120)
    assert shot.stat().st_size > 50_000  # a rendered page with tables and heatmaps, not a blank one
