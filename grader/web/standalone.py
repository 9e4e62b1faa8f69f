"""The draft page as one self-contained HTML file (`grader evaluate --format html -o draft.html`).

Same template as the served page, with the stylesheet inlined (allowed by its hash in a
Content-Security-Policy meta tag), images embedded as data URIs, citation panels and full source
listings in the page instead of links to the server, and nothing fetched from anywhere.
"""

from __future__ import annotations

from markupsafe import Markup

from grader.draft import Draft
from grader.rubric import Rubric
from grader.web import draft_view
from grader.web.assets import standalone_csp, stylesheet
from grader.web.sections import evidence_sections
from grader.web.source import highlight_file, span_lines
from grader.web.templating import render


def _cited_lines(view: draft_view.DraftView) -> dict[str, set[int]]:
    marked: dict[str, set[int]] = {}
    for c in view.criteria:
        for ct in c.citations:
            cit = ct.citation
            if cit.file in view.files:
                total = len(view.files[cit.file].splitlines())
                marked.setdefault(cit.file, set()).update(span_lines(cit.start_line, cit.end_line, total))
    return marked


def render_standalone(draft: Draft, files: dict[str, str], *, rubric: Rubric | None = None,
                      task_title: str | None = None) -> str:
    view = draft_view.build(draft, files, rubric=rubric, task_title=task_title)
    excerpts = {ct.anchor: draft_view.excerpt(files, ct.citation.file, ct.citation.start_line, ct.citation.end_line,
                                              f"{ct.anchor}-L") for c in view.criteria for ct in c.citations}
    marked = _cited_lines(view)
    sources = [(path, highlight_file(path, text, tuple(marked.get(path, ())))) for path, text in files.items()]
    links = draft_view.StandaloneLinks()
    return render(
        "draft.html.j2", v=view, links=links, standalone=True, csp=standalone_csp(),
        inline_css=Markup(stylesheet()), excerpts=excerpts, sources=sources, evidence_sections=evidence_sections(view, links),
        alert_flags=draft_view.ALERT_FLAGS, names={}, can_review=False, form_error=None, flash=None, ui="",
        who=None, nav=None, nav_items=(), csrf="", scale=(), auth_off=False, asset_version="")
