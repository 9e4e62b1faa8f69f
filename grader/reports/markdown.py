"""Markdown renderings of drafts and evidence bundles, for terminals and review notes."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2

from evidence.model import EvidenceBundle, EvidenceItem
from grader.draft import Citation, CriterionDraft, Draft
from grader.reports.roofline import roofline_markdown
from grader.rubric import Rubric

TEMPLATES = Path(__file__).resolve().parent / "templates"


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


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=False, trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return env.get_template("draft.md.j2")


def _citation(cit: Citation, bundle: EvidenceBundle) -> dict[str, str]:
    item = bundle.get(cit.evidence_id)
    span = ""
    if cit.file and cit.start_line:
        span = f" {cit.file}:{cit.start_line}" + (f"-{cit.end_line}" if cit.end_line and cit.end_line != cit.start_line else "")
    return {"id": cit.evidence_id, "span": span,
            "title": getattr(item, "title", None) or getattr(item, "message", "(not in bundle)")}


def render_draft(draft: Draft, rubric: Rubric | None = None) -> str:
    """The draft as Markdown, through the Jinja2 template reports/templates/draft.md.j2."""
    titles = {c.id: c.title for c in rubric.criteria} if rubric else {}
    scale_max = rubric.scale_max if rubric else 5
    ev = draft.evidence
    rows = [{"id": c.criterion_id, "score": _score_text(c, scale_max),
             "confidence": f"{c.confidence:.2f}" if c.confidence is not None else "-",
             "flags": ", ".join(sorted({f.code for f in c.flags})) or "-", "calibration": _calibration_text(c)}
            for c in draft.criteria]
    sections = [{
        "title": titles.get(c.criterion_id, c.criterion_id), "score": _score_text(c, scale_max),
        "reason": c.reason if c.reason and c.status != "scored" else "",
        "rationale": c.rationale if c.rationale and c.rationale != c.reason else "",
        "samples": f"{list(c.samples)} (dispersion {c.dispersion})" if c.samples else "",
        "flags": c.flags,
        "review": "; ".join(c.consistency.reasons) if c.consistency and c.consistency.needs_full_review else "",
        "citations": [_citation(cit, ev) for cit in c.citations],
    } for c in draft.criteria]
    roof = next((i for i in ev.items if i.kind == "perf.roofline"), None)
    roofline = ""
    if roof is not None:
        roofline = "\n".join(roofline_markdown(roof)).rstrip("\n")
    return _template().render(draft=draft, bundle_hash=ev.bundle_hash, n_items=len(ev.items),
                              n_failures=len(ev.failures), rows=rows, sections=sections, roofline=roofline)


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
