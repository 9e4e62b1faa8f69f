"""Markdown rendering of a rubric: criteria, levels, evidence kinds and evidence rules (`grader rubric show`)."""

from __future__ import annotations

from grader.rubric import Rubric


def render_rubric(rubric: Rubric) -> str:
    lines = [f"# {rubric.title} ({rubric.id} {rubric.version})", "", rubric.description.strip(), "",
             f"hash: {rubric.content_hash}"]
    for c in rubric.criteria:
        lines += ["", f"## {c.id} — {c.title}", "", c.description.strip(), "",
                  f"applies when: {c.applies_when}; basis: {', '.join(c.basis) or '-'}; start: {c.start}",
                  f"evidence kinds: {', '.join(c.evidence_kinds)}", ""]
        lines += [f"- **{lv.score}**: {lv.descriptor}" for lv in sorted(c.levels, key=lambda lv: lv.score)]
        lines += [f"- rule `{rule.id}` ({rule.effect}): {rule.description}" for rule in c.rules]
    return "\n".join(lines) + "\n"
