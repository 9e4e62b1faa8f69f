"""The roofline plot of a draft's `perf.roofline` evidence, as a small hand-built SVG.

Log-log: attainable TFLOPS against arithmetic intensity (FLOP per HBM byte), decade grid and
ticks. The roof is min(peak, intensity x HBM bandwidth); when the DMA engines' aggregate is lower
than HBM (trn1), its roof is drawn dashed. The ridge point and the kernel's point (achieved TFLOPS
at its intensity, with a drop line from the roof above it) are marked, and a key below the axes
gives the numbers. Kernels without matmul FLOPs have no point on this plot; the reports state their
bandwidth use in words instead.

Hand-built rather than drawn by matplotlib: it is a handful of lines and labels, and matplotlib
cost about a second (import and draw) on the first view of a draft page. The SVG uses presentation
attributes only, no `style` attribute or element, so a page under a strict Content-Security-Policy
can inline it; it is deterministic (the same item gives the same bytes) and escapes its labels.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass
from html import escape

from evidence.model import EvidenceItem

WIDTH, HEIGHT = 520, 404
LEFT, RIGHT, TOP, BOTTOM = 62, 494, 34, 290  # the plot area
ROOF, POINT, GRID, INK = "#1f4e79", "#c0392b", "#d0d4da", "#333"
FONT = 'font-family="system-ui, sans-serif"'
DEFAULT_LABEL = "Roofline plot of the cost model's estimate"


@dataclass(frozen=True)
class _Axes:
    """Log-log mapping from (FLOP/B, TFLOPS) to SVG coordinates; the bounds are log10 values (whole
    decades but for the top, which leaves a little room above the peak)."""

    x0: int
    x1: int
    y0: int
    y1: float

    def x(self, value: float) -> float:
        return LEFT + (math.log10(value) - self.x0) / (self.x1 - self.x0) * (RIGHT - LEFT)

    def y(self, value: float) -> float:
        return BOTTOM - (math.log10(value) - self.y0) / (self.y1 - self.y0) * (BOTTOM - TOP)


def _decade(k: int) -> str:
    return f"{10.0 ** k:g}" if -3 <= k <= 4 else f"1e{k}"


def _num(v: float) -> str:
    return f"{v:,.0f}" if v >= 1000 else f"{v:.3g}"


def _f(v: float) -> str:
    return f"{v:.1f}"


def _roof(ax: _Axes, peak: float, gbps: float) -> str:
    """Polyline points of min(peak, x * bandwidth): the slope from the left edge (or from where it
    enters the plot), the ridge, then flat to the right edge."""
    ridge = peak * 1e3 / gbps
    start = max(10.0 ** ax.x0, 10.0 ** ax.y0 * 1e3 / gbps)
    pts = [(start, start * gbps / 1e3), (ridge, peak), (10.0 ** ax.x1, peak)]
    return " ".join(f"{_f(ax.x(x))},{_f(ax.y(y))}" for x, y in pts)


def _grid(ax: _Axes) -> list[str]:
    out = []
    for k in range(ax.x0, ax.x1 + 1):
        x = _f(ax.x(10.0 ** k))
        out.append(f'<line x1="{x}" y1="{TOP}" x2="{x}" y2="{BOTTOM}" stroke="{GRID}" stroke-width="0.8"/>')
        out.append(f'<text x="{x}" y="{BOTTOM + 18}" text-anchor="middle">{_decade(k)}</text>')
    for k in range(ax.y0, math.floor(ax.y1) + 1):
        y = _f(ax.y(10.0 ** k))
        out.append(f'<line x1="{LEFT}" y1="{y}" x2="{RIGHT}" y2="{y}" stroke="{GRID}" stroke-width="0.8"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y}" dy="4" text-anchor="end">{_decade(k)}</text>')
    return out


def roofline_svg(item: EvidenceItem, *, label: str = DEFAULT_LABEL, described_by: str | None = None,
                 css_class: str | None = None) -> str | None:
    """SVG text of the roofline for a `perf.roofline` item, or None when the kernel has no matmul FLOPs.
    `label` is its accessible name; `described_by` the id of the words that describe it on a page."""
    m = item.metrics
    ai, achieved = m.get("arithmetic_intensity", 0.0), m.get("achieved_tflops", 0.0)
    peak, hbm, mem = m.get("peak_tflops", 0.0), m.get("hbm_gbps", 0.0), m.get("memory_gbps", 0.0)
    if ai <= 0 or achieved <= 0 or peak <= 0 or hbm <= 0:
        return None
    slow = mem if 0 < mem < hbm else None
    ridge = peak * 1e3 / hbm
    lo, hi = min(ai, ridge) / 20, max(ai, ridge) * 20
    floor_y = min(achieved, lo * (slow or hbm) / 1e3)
    ax = _Axes(math.floor(math.log10(lo)), math.ceil(math.log10(hi)),
               math.floor(math.log10(floor_y)), math.log10(peak) + 0.3)
    px, py, top = ax.x(ai), ax.y(achieved), ax.y(min(peak, ai * (slow or hbm) / 1e3))
    rx, ry = _f(ax.x(ridge)), _f(ax.y(peak))
    title = f"Roofline ({item.labels.get('target', '')}, {item.labels.get('regime', '')})"
    kernel = f"kernel: {_num(ai)} FLOP/B, {_num(achieved)} TFLOPS ({m.get('roofline_efficiency', 0):.0%} of bound)"
    key = [(f'<line x1="0" y1="-4" x2="24" y2="-4" stroke="{ROOF}" stroke-width="2.5"/>',
            f"roof: {peak:g} TFLOPS, HBM {hbm:g} GB/s")]
    if slow:
        key.append((f'<line x1="0" y1="-4" x2="24" y2="-4" stroke="{ROOF}" stroke-width="1.5" stroke-dasharray="6 4"/>',
                    f"DMA engines {slow:g} GB/s"))
    key.append((f'<circle cx="12" cy="-4" r="4.5" fill="{POINT}"/>', kernel))
    root = [f'xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}"',
            f'role="img" aria-label="{escape(label)}"']
    if described_by:
        root.append(f'aria-describedby="{escape(described_by)}"')
    if css_class:
        root.append(f'class="{escape(css_class)}"')
    parts = [f"<svg {' '.join(root)}>", f"<title>{escape(label)}</title>",
             f'<g {FONT} font-size="12.5" fill="{INK}">',
             f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>',
             f'<text x="{(LEFT + RIGHT) // 2}" y="21" text-anchor="middle" font-size="14.5" font-weight="bold">{escape(title)}</text>',
             *_grid(ax),
             f'<rect x="{LEFT}" y="{TOP}" width="{RIGHT - LEFT}" height="{BOTTOM - TOP}" fill="none" stroke="#888"/>',
             f'<line x1="{rx}" y1="{BOTTOM}" x2="{rx}" y2="{ry}" stroke="#777" stroke-width="1" stroke-dasharray="2 3"/>',
             f'<text x="{_f(float(rx) + 5)}" y="{_f(float(ry) + 15)}" fill="#555">ridge {ridge:.0f} FLOP/B</text>']
    if slow:
        parts.append(f'<polyline points="{_roof(ax, peak, slow)}" fill="none" stroke="{ROOF}" stroke-width="1.5" stroke-dasharray="6 4"/>')
    parts += [f'<polyline points="{_roof(ax, peak, hbm)}" fill="none" stroke="{ROOF}" stroke-width="2.5"/>',
              f'<line x1="{_f(px)}" y1="{_f(top)}" x2="{_f(px)}" y2="{_f(py)}" stroke="{POINT}" stroke-width="1" stroke-dasharray="3 3"/>',
              f'<circle cx="{_f(px)}" cy="{_f(py)}" r="5" fill="{POINT}" stroke="#fff" stroke-width="1.5"/>',
              f'<text x="{_f(px + 9)}" y="{_f(py + 4)}" fill="{POINT}" font-weight="bold">kernel</text>',
              f'<text x="{(LEFT + RIGHT) // 2}" y="{BOTTOM + 38}" text-anchor="middle">arithmetic intensity (FLOP per HBM byte)</text>',
              f'<text transform="translate(16 {(TOP + BOTTOM) // 2}) rotate(-90)" text-anchor="middle">TFLOPS</text>']
    for n, (mark, text) in enumerate(key):
        parts.append(f'<g transform="translate({LEFT} {BOTTOM + 66 + 19 * n})">{mark}'
                     f'<text x="32" y="0">{escape(text)}</text></g>')
    return "\n".join([*parts, "</g>", "</svg>"]) + "\n"


def roofline_markdown(item: EvidenceItem) -> list[str]:
    """Markdown lines: the plot as an embedded SVG image, or the bandwidth figures without FLOPs."""
    svg = roofline_svg(item)
    lines = ["## Roofline", "", f"{item.title} [`{item.id}`]", ""]
    if svg is None:
        return lines
    data = base64.b64encode(svg.encode()).decode()
    return lines + [f"![roofline](data:image/svg+xml;base64,{data})", ""]
