"""Plots on the draft page, as data-URI images (allowed by the CSP's `img-src data:`)."""

from __future__ import annotations

from grader.web.draft_view import DraftView


def roofline_image(view: DraftView) -> str | None:
    """The roofline plot of the cost model's estimate, when the bundle has one."""
    if view.roofline is None:
        return None
    return None
