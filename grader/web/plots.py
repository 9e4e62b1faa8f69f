"""The performance section's roofline: the cost model's plot (`grader.reports.roofline`) inlined as
SVG, and the same facts in words for those who cannot see it.

Inline rather than a data-URI image: the plot is a few kilobytes of presentation attributes (no
`style`, so the pages' strict CSP allows it), its text is the page's text, and it is named
by its <title> and described by the words beside it (`aria-describedby`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from markupsafe import Markup

from evidence.model import EvidenceItem
from grader.reports.roofline import roofline_svg
from grader.web.draft_view import DraftView

PLOT_LABEL = "Roofline plot of the cost model's estimate, described in words beside it."
WORDS_ID = "performance-words"


@lru_cache(maxsize=128)
def _roofline(item_json: str) -> Markup | None:
    svg = roofline_svg(EvidenceItem.model_validate_json(item_json), label=PLOT_LABEL, described_by=WORDS_ID,
                       css_class="roofline")
    return None if svg is None else Markup(svg)  # built from numbers and escaped labels only


def roofline_plot(view: DraftView) -> Markup | None:
    """The roofline plot of the cost model's estimate as inline SVG, when the bundle has one with
    matmul FLOPs."""
    item = view.roofline
    return None if item is None else _roofline(json.dumps(item.model_dump(mode="json"), sort_keys=True))


@dataclass(frozen=True)
class Sentence:
    text: str
    evidence_id: str


def _roofline_sentence(item: EvidenceItem) -> str:
    m = item.metrics
    ai, ridge = m.get("arithmetic_intensity", 0.0), m.get("ridge_point", 0.0)
    achieved, attainable, peak = m.get("achieved_tflops", 0.0), m.get("attainable_tflops", 0.0), m.get("peak_tflops", 0.0)
    if ai <= 0 or achieved <= 0 or ridge <= 0:
        return item.title + "."  # no matmul FLOPs: no point on the plot, the bandwidth figures in words
    side = "left of" if ai < ridge else "right of"
    regime = item.labels.get("regime", "memory-bound" if ai < ridge else "compute-bound")
    return (f"On the roofline the kernel sits at {ai:.3g} FLOP per HBM byte, {side} the ridge point at "
            f"{ridge:.0f} FLOP/B, so it is {regime}: it reaches {achieved:.3g} TFLOPS where its intensity allows "
            f"at most {attainable:.3g}, against a peak of {peak:g} TFLOPS.")


def performance_words(view: DraftView) -> tuple[Sentence, ...]:
    """The estimate, the roofline point, the bottleneck and the what-ifs (largest saving first) in words:
    the text alternative of the roofline plot, each sentence naming its evidence item."""
    by_kind: dict[str, list[EvidenceItem]] = {}
    for item in view.perf:
        by_kind.setdefault(item.kind, []).append(item)
    out = [Sentence(i.title + ".", i.id) for i in by_kind.get("perf.estimate", [])]
    out += [Sentence(_roofline_sentence(i), i.id) for i in by_kind.get("perf.roofline", [])]
    out += [Sentence(i.title + ".", i.id) for i in by_kind.get("perf.bottleneck", [])]
    whatifs = sorted(by_kind.get("perf.whatif", []), key=lambda i: -i.metrics.get("speedup", 1.0))
    out += [Sentence(i.title + ".", i.id) for i in whatifs]
    return tuple(out)
