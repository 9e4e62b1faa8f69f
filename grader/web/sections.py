"""The draft page's evidence sections (simulator findings, numerics, performance with the roofline,
the evidence by collector), rendered once per draft and kind of links.

They depend on the draft and its files only, never on the review state, and are most of a 200-item
draft page: rendered per request they cost tens of milliseconds; memoised per draft they cost none.
"""

from __future__ import annotations

from markupsafe import Markup

from grader.web.draft_view import DraftView, Links
from grader.web.per_draft import per_draft
from grader.web.plots import WORDS_ID, performance_words, roofline_plot
from grader.web.templating import render


def evidence_sections(view: DraftView, links: Links) -> Markup:
    key = ("sections", links, tuple(sorted(view.files.items())))
    return per_draft.get(view.draft, key, lambda: Markup(render(
        "evidence_sections.html.j2", v=view, links=links, roofline_plot=roofline_plot(view),
        perf_words=performance_words(view), words_id=WORDS_ID)))
