"""The Markdown draft report is a Jinja2 template (reports/templates/draft.md.j2), like the prompts."""

from __future__ import annotations

import grader.reports.markdown as markdown
from grader.draft import ConsistencyCheck, Flag
from grader.drafting.rules import RulesDrafter
from tests.fakes import llm_case as case


def _draft():
    draft = RulesDrafter().draft(case.submission(), case.bundle(), case.rubric())
    first = draft.criteria[0].model_copy(update={
        "samples": (2, 3, None), "dispersion": 1.0, "flags": (Flag(code="unstable_samples", message="2 vs 3"),),
        "consistency": ConsistencyCheck(calibration="failed gate: QWK", calibrated=False, epoch="epoch:x",
                                        needs_full_review=True, reasons=("far from gold",))})
    return draft.model_copy(update={"criteria": (first, *draft.criteria[1:])})


def test_report_shows_scores_samples_flags_review_and_citations():
    text = markdown.render_draft(_draft(), case.rubric())
    assert text.startswith("# Draft evaluation: add-rows\n") and text.endswith("\n") and not text.endswith("\n\n")
    assert "| kernel_correctness | 2/5 | " in text and "failed gate: QWK, full review |" in text
    assert "## Kernel correctness — 2/5\n" in text and "\nSamples: [2, 3, None] (dispersion 1.0)\n" in text
    assert "\n> **unstable_samples**: 2 vs 3\n" in text and "\n> **needs full human review**: far from gold\n" in text
    assert "\nCited evidence:\n- `sim.output:out` — Output 'out' mismatches" in text
    assert "## Benchmarking — not applicable\n\nReason: no benchmark claims" in text


def test_report_is_rendered_from_the_template(tmp_path, monkeypatch):
    (tmp_path / "draft.md.j2").write_text("{{ draft.task_id }}: {{ rows | length }} criteria\n")
    monkeypatch.setattr(markdown, "TEMPLATES", tmp_path)
    markdown._template.cache_clear()
    try:
        assert markdown.render_draft(_draft(), case.rubric()) == "add-rows: 4 criteria\n"
    finally:
        markdown._template.cache_clear()
