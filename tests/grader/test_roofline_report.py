"""The Markdown report shows the roofline of the cost model's perf.roofline evidence (SVG, matplotlib)."""

from __future__ import annotations

import base64
import re

from evidence.model import EvidenceItem
from grader.reports.roofline import roofline_markdown, roofline_svg


def _item(**metrics) -> EvidenceItem:
    base = {"arithmetic_intensity": 114.0, "achieved_tflops": 14.3, "peak_tflops": 91.75, "hbm_gbps": 410.0,
            "memory_gbps": 272.0, "roofline_efficiency": 0.63}
    return EvidenceItem(id="perf.roofline:kernel.py", kind="perf.roofline", analyzer="perf@1",
                        title="Roofline: 114 FLOP/B against a ridge point of 224 FLOP/B (memory-bound)",
                        metrics={**base, **metrics}, labels={"target": "trn1", "regime": "memory-bound"})


def test_svg_marks_the_roof_the_ridge_and_the_kernel_and_is_deterministic():
    svg = roofline_svg(_item())
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert "ridge 224 FLOP/B" in svg and "114 FLOP/B, 14.3 TFLOPS (63% of bound)" in svg
    assert "DMA engines 272 GB/s" in svg  # the lower DMA roof of trn1, dashed
    assert roofline_svg(_item()) == svg


def test_markdown_embeds_the_svg_or_says_why_there_is_none():
    lines = roofline_markdown(_item())
    assert lines[0] == "## Roofline" and "`perf.roofline:kernel.py`" in lines[2]
    data = re.search(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", "\n".join(lines)).group(1)
    assert "<svg" in base64.b64decode(data).decode()
    no_flops = roofline_markdown(_item(arithmetic_intensity=0.0, achieved_tflops=0.0))
    assert roofline_svg(_item(arithmetic_intensity=0.0, achieved_tflops=0.0)) is None
    assert not any("data:image" in line for line in no_flops)
