"""Markdown renderings of drafts and evidence bundles, for terminals and review notes."""

from __future__ import annotations

from evidence.model import EvidenceBundle, EvidenceItem
from grader.draft import CriterionDraft, Draft
from grader.rubric import Rubric


def _where(item: EvidenceItem) -> str:
    return f" ({item.location})" if item.location else ""


def _score_text(c: CriterionDraft, scale_max: int) -> str:
    if c.status == "scored":
        return f"{c.score}/{scale_max}"
    return c.status.replace("_", " ")


def _calibration_text(c: CriterionDraft) -> str:
    check = c.consistency
    if check is None:
        return "not checked"
    text = "calibrated" if check.calibrated else check.calibration
    return text + (", full review" if check.needs_full_review else "")


def render_draft(draft: Draft, rubric: Rubric | None = None) -> str:
    titles = {c.id: c.title for c in rubric.criteria} if rubric else {}
    scale_max = rubric.scale_max if rubric else 5
    ev = draft.evidence
    lines = [
        f"# Draft evaluation: {draft.task_id}",
        "",
        f"- rubric: {draft.rubric.id} {draft.rubric.version} ({draft.rubric.hash[:19]})",
        f"- drafter: {draft.drafter.name} {draft.drafter.version}" + (f", model {draft.drafter.model}" if draft.drafter.model else ""),
        f"- submission: {draft.submission_hash[:19]}; evidence bundle {ev.bundle_hash[:19]} ({len(ev.items)} items, {len(ev.failures)} analyzer failures)",
        "- status: DRAFT — not final until a reviewer signs off",
        "",
        "| criterion | score | confidence | flags | calibration |",
        "|---|---|---|---|---|",
    ]
    for c in draft.criteria:
        conf = f"{c.confidence:.2f}" if c.confidence is not None else "-"
        flags = ", ".join(sorted({f.code for f in c.flags})) or "-"
        lines.append(f"| {c.criterion_id} | {_score_text(c, scale_max)} | {conf} | {flags} | {_calibration_text(c)} |")
    for c in draft.criteria:
        lines += ["", f"## {titles.get(c.criterion_id, c.criterion_id)} — {_score_text(c, scale_max)}", ""]
        if c.reason and c.status != "scored":
            lines.append(f"Reason: {c.reason}")
            lines.append("")
        if c.rationale and c.rationale != c.reason:
            lines.append(c.rationale)
        if c.samples:
            lines.append(f"\nSamples: {list(c.samples)} (dispersion {c.dispersion})")
        for flag in c.flags:
            lines.append(f"\n> **{flag.code}**: {flag.message}" + (f" [{flag.evidence_id}]" if flag.evidence_id else ""))
        if c.consistency and c.consistency.needs_full_review:
            lines.append("\n> **needs full human review**: " + "; ".join(c.consistency.reasons))
        if c.citations:
            lines.append("\nCited evidence:")
            for cit in c.citations:
                item = ev.get(cit.evidence_id)
                title = getattr(item, "title", None) or getattr(item, "message", "(not in bundle)")
                span = ""
                if cit.file and cit.start_line:
                    span = f" {cit.file}:{cit.start_line}" + (f"-{cit.end_line}" if cit.end_line and cit.end_line != cit.start_line else "")
                lines.append(f"- `{cit.evidence_id}`{span} — {title}")
    return "\n".join(lines) + "\n"


def _timings(timings: dict[str, float]) -> str:
    """'nki-simulator 1.46s (kernel 0.90s, reference 0.10s), nki-static 0.09s': stages beside their collector."""
    parts = []
    for name, seconds in timings.items():
        if "." in name:
            continue
        stages = [f"{k.split('.', 1)[1]} {v:.3f}s" for k, v in timings.items() if k.startswith(name + ".")]
        parts.append(f"{name} {seconds:.3f}s" + (f" ({', '.join(stages)})" if stages else ""))
    return ", ".join(parts)


def render_bundle(bundle: EvidenceBundle) -> str:
    lines = [f"# Evidence bundle {bundle.bundle_hash[:19]}", "",
             f"Analyzers: {', '.join(f'{k}@{v}' for k, v in bundle.analyzers.items()) or 'none'}", ""]
    if bundle.timings:
        lines.append("Timings: " + _timings(bundle.timings))
        lines.append("")
    for f in bundle.failures:
        lines.append(f"- **FAILED** `{f.id}` {f.analyzer}: {f.error_type}: {f.message}")
    for item in bundle.items:
        metrics = ", ".join(f"{k}={v:g}" for k, v in sorted(item.metrics.items()))
        lines.append(f"- [{item.severity.value}] `{item.id}`{_where(item)} — {item.title}" + (f" ({metrics})" if metrics else ""))
    return "\n".join(lines) + "\n"
