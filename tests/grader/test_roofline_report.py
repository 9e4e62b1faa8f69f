"""The roofline plot (grader.reports.roofline): a hand-built SVG whose roof, ridge and kernel point sit
where the cost model's numbers say, shared by the Markdown report and the draft pages."""

from __future__ import annotations

import base64
import math
import re
import xml.etree.ElementTree as ET

from evidence.model import EvidenceItem
from grader.reports.roofline import roofline_markdown, roofline_svg

NS = {"s": "http://www.w3.org/2000/svg"}


def _item(**metrics) -> EvidenceItem:
    base = {"arithmetic_intensity": 114.0, "achieved_tflops": 14.3, "peak_tflops": 91.75, "hbm_gbps": 410.0,
            "memory_gbps": 272.0, "roofline_efficiency": 0.63}
    return EvidenceItem(id="perf.roofline:kernel.py", kind="perf.roofline", analyzer="perf@1",
                        title="Roofline: 114 FLOP/B against a ridge point of 224 FLOP/B (memory-bound)",
                        metrics={**base, **metrics}, labels={"target": "trn1", "regime": "memory-bound"})


def _scale(root: ET.Element, axis: str):  # type: ignore[no-untyped-def]
    """From the decade tick labels, the function taking an SVG coordinate back to a value on that axis."""
    ticks = []
    for t in root.iter("{%s}text" % NS["s"]):
        if re.fullmatch(r"[0-9.]+|1e-?\d+", t.text or "") and (t.get("text-anchor") == "middle") == (axis == "x"):
            ticks.append((float(t.get(axis)), math.log10(float(t.text))))
    (c0, v0), (c1, v1) = ticks[0], ticks[-1]
    return lambda c: 10 ** (v0 + (c - c0) / (c1 - c0) * (v1 - v0))


def test_the_roof_the_ridge_and_the_kernel_sit_at_the_cost_models_numbers():
    svg = roofline_svg(_item())
    root = ET.fromstring(svg)
    x, y = _scale(root, "x"), _scale(root, "y")
    point = next(c for c in root.iter("{%s}circle" % NS["s"]) if c.get("r") == "5")
    assert math.isclose(x(float(point.get("cx"))), 114.0, rel_tol=0.01)
    assert math.isclose(y(float(point.get("cy"))), 14.3, rel_tol=0.01)
    solid, dashed = sorted(root.iter("{%s}polyline" % NS["s"]), key=lambda p: p.get("stroke-dasharray") is not None)
    corner = [tuple(map(float, xy.split(","))) for xy in solid.get("points").split()][1]
    assert math.isclose(x(corner[0]), 91.75e3 / 410, rel_tol=0.01) and math.isclose(y(corner[1]), 91.75, rel_tol=0.01)
    dma = [tuple(map(float, xy.split(","))) for xy in dashed.get("points").split()][1]
    assert math.isclose(x(dma[0]), 91.75e3 / 272, rel_tol=0.01)  # trn1's slower DMA roof, dashed
    text = " ".join(t.text or "" for t in root.iter("{%s}text" % NS["s"]))
    assert "ridge 224 FLOP/B" in text and "kernel: 114 FLOP/B, 14.3 TFLOPS (63% of bound)" in text
    assert "DMA engines 272 GB/s" in text and "Roofline (trn1, memory-bound)" in text
    assert roofline_svg(_item()) == svg  # deterministic


def test_the_svg_is_safe_to_inline_under_a_strict_csp_and_escapes_its_labels():
    item = _item().model_copy(update={"labels": {"target": "<script>alert(1)</script>", "regime": "memory-bound"}})
    svg = roofline_svg(item, label='Plot "A" & B', described_by="words", css_class="roofline")
    root = ET.fromstring(svg)  # well-formed XML
    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert not any("style" in el.attrib for el in root.iter()) and root.find("s:style", NS) is None
    assert root.get("aria-label") == 'Plot "A" & B' and root.find("s:title", NS).text == 'Plot "A" & B'
    assert root.get("aria-describedby") == "words" and root.get("class") == "roofline" and root.get("role") == "img"


def test_markdown_embeds_the_svg_or_says_why_there_is_none():
    lines = roofline_markdown(_item())
    assert lines[0] == "## Roofline" and "`perf.roofline:kernel.py`" in lines[2]
    data = re.search(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", "\n".join(lines)).group(1)
    assert ET.fromstring(base64.b64decode(data).decode()).tag == "{%s}svg" % NS["s"]
    no_flops = roofline_markdown(_item(arithmetic_intensity=0.0, achieved_tflops=0.0))
    assert roofline_svg(_item(arithmetic_intensity=0.0, achieved_tflops=0.0)) is None
    assert not any("data:image" in line for line in no_flops)
