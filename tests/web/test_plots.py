"""The roofline on the draft page is the cost model's own plot (grader.reports.roofline) inlined as SVG,
and the same facts are given in words."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evidence.model import EvidenceItem
from grader.draft import Draft
from grader.web import draft_view
from grader.web.plots import PLOT_LABEL, WORDS_ID, performance_words, roofline_plot


def roofline_item() -> EvidenceItem:
    return EvidenceItem(id="perf.roofline:kernel.py", kind="perf.roofline", analyzer="perf@1",
                        title="Roofline: 85 FLOP/B against a ridge point of 217 FLOP/B (memory-bound)",
                        metrics={"arithmetic_intensity": 85.0, "ridge_point": 217.0, "achieved_tflops": 40.0,
                                 "attainable_tflops": 246.0, "peak_tflops": 667.0, "hbm_gbps": 2900.0,
                                 "memory_gbps": 2900.0, "roofline_efficiency": 0.4},
                        labels={"regime": "memory-bound", "target": "trn2"})


def view_with(items: list[EvidenceItem]) -> draft_view.DraftView:
    draft = Draft.model_validate({
        "task_id": "t", "submission_hash": "s", "rubric": {"id": "nki-kernel-review", "version": "1", "hash": "h"},
        "drafter": {"name": "rules", "version": "1"}, "criteria": [],
        "evidence": {"submission_hash": "s", "items": [i.model_dump() for i in items]}})
    return draft_view.build(draft, {})


def test_no_roofline_without_a_cost_model_estimate():
    assert roofline_plot(view_with([])) is None


def test_roofline_is_the_cost_models_svg_named_and_described_by_the_words():
    svg = roofline_plot(view_with([roofline_item()]))
    root = ET.fromstring(str(svg))
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("role") == "img"
    assert root.get("aria-label") == PLOT_LABEL and root.get("aria-describedby") == WORDS_ID
    assert "kernel: 85 FLOP/B, 40 TFLOPS (40% of bound)" in str(svg) and "<script" not in str(svg)


def perf_item(kind: str, ident: str, title: str, **metrics: float) -> EvidenceItem:
    return EvidenceItem(id=ident, kind=kind, analyzer="perf@1", title=title, metrics=metrics)


def test_the_estimate_roofline_bottleneck_and_what_ifs_in_words():
    view = view_with([
        perf_item("perf.whatif", "perf.whatif:small-dma", "What-if: batching transfers: 9.4 us -> 7.97 us (1.18x)", speedup=1.18),
        perf_item("perf.bottleneck", "perf.bottleneck:dma", "Bottleneck: DMA, 64% busy"),
        roofline_item(),
        perf_item("perf.estimate", "perf.estimate:kernel.py", "Estimated 9.4 us on trn2 (bottleneck DMA)"),
        perf_item("perf.whatif", "perf.whatif:overlap", "What-if: perfect overlap: 9.4 us -> 6.05 us (1.55x)", speedup=1.55),
    ])
    words = performance_words(view)
    # Estimate, roofline, bottleneck, then the what-ifs with the largest saving first; each names its item.
    assert [s.evidence_id for s in words] == ["perf.estimate:kernel.py", "perf.roofline:kernel.py", "perf.bottleneck:dma",
                                              "perf.whatif:overlap", "perf.whatif:small-dma"]
    assert words[1].text == ("On the roofline the kernel sits at 85 FLOP per HBM byte, left of the ridge point at 217 FLOP/B, "
                             "so it is memory-bound: it reaches 40 TFLOPS where its intensity allows at most 246, "
                             "against a peak of 667 TFLOPS.")
    assert words[0].text == "Estimated 9.4 us on trn2 (bottleneck DMA)."


def test_without_matmul_flops_the_words_give_the_bandwidth_and_there_is_no_plot():
    item = perf_item("perf.roofline", "perf.roofline:kernel.py",
                     "Roofline: no matmul FLOPs; 3.2 MiB of HBM traffic at 41% of HBM bandwidth (memory-bound)",
                     arithmetic_intensity=0.0, achieved_tflops=0.0, peak_tflops=667.0, hbm_gbps=2900.0)
    view = view_with([item])
    assert roofline_plot(view) is None
    assert [s.text for s in performance_words(view)] == [item.title + "."]
