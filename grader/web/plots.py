"""Plots on the draft page, as data-URI images (allowed by the CSP's `img-src data:`; an SVG shown
through <img> runs no script and is not styled by the page)."""

from __future__ import annotations

import base64
import json
from functools import lru_cache

from evidence.model import EvidenceItem
from grader.web.draft_view import DraftView


@lru_cache(maxsize=128)
def _roofline_uri(item_json: str) -> str | None:
    try:
        from grader.reports.roofline import roofline_svg  # the cost-model report's plot (issue 14)
    except ImportError:  # until the cost model's report lands, the page shows the estimate without a plot
        return None
    svg = roofline_svg(EvidenceItem.model_validate_json(item_json))
    return None if svg is None else "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def roofline_image(view: DraftView) -> str | None:
    """The roofline plot of the cost model's estimate, when the bundle has one (rendered once per item)."""
    item = view.roofline
    return None if item is None else _roofline_uri(json.dumps(item.model_dump(mode="json"), sort_keys=True))
