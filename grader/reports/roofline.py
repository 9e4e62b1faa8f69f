"""The roofline plot of a draft's `perf.roofline` evidence, as SVG (matplotlib, imported lazily).

Log-log: attainable TFLOPS against arithmetic intensity (FLOP per HBM byte). The roof is
min(peak, intensity x HBM bandwidth); when the DMA engines' aggregate is lower than HBM (trn1), its
roof is drawn dashed. The ridge point and the kernel's point (achieved TFLOPS at its intensity)
are marked. Kernels without matmul FLOPs have no point on this plot; the report states their
bandwidth use instead. The SVG is deterministic (no date, fixed id salt).
"""

from __future__ import annotations

import base64
import io

from evidence.model import EvidenceItem


def roofline_svg(item: EvidenceItem) -> str | None:
    """SVG text of the roofline for a `perf.roofline` item, or None when the kernel has no matmul FLOPs."""
    m = item.metrics
    ai, achieved = m.get("arithmetic_intensity", 0.0), m.get("achieved_tflops", 0.0)
    peak, hbm, mem = m.get("peak_tflops", 0.0), m.get("hbm_gbps", 0.0), m.get("memory_gbps", 0.0)
    if ai <= 0 or achieved <= 0 or peak <= 0 or hbm <= 0:
        return None
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot
    import matplotlib.pyplot as plt
    import numpy as np

    ridge = peak * 1e3 / hbm  # TFLOPS / (GB/s) -> FLOP/B
    lo, hi = min(ai, ridge) / 20, max(ai, ridge) * 20
    x = np.logspace(np.log10(lo), np.log10(hi), 200)
    with matplotlib.rc_context({"svg.hashsalt": "nki-grader-roofline", "font.size": 9}):
        fig, ax = plt.subplots(figsize=(5.5, 3.6))
        ax.loglog(x, np.minimum(peak, x * hbm / 1e3), color="#1f4e79", lw=2, label=f"roof: {peak:g} TFLOPS, HBM {hbm:g} GB/s")
        if 0 < mem < hbm:
            ax.loglog(x, np.minimum(peak, x * mem / 1e3), color="#1f4e79", lw=1, ls="--",
                      label=f"DMA engines {mem:g} GB/s")
        ax.axvline(ridge, color="gray", lw=0.8, ls=":")
        ax.annotate(f"ridge {ridge:.0f} FLOP/B", (ridge, peak), textcoords="offset points", xytext=(4, -12), color="gray")
        ax.plot([ai], [achieved], "o", color="#c0392b",
                label=f"kernel: {ai:.3g} FLOP/B, {achieved:.3g} TFLOPS ({m.get('roofline_efficiency', 0):.0%} of bound)")
        ax.set_xlabel("arithmetic intensity (FLOP per HBM byte)")
        ax.set_ylabel("TFLOPS")
        ax.set_title(f"Roofline ({item.labels.get('target', '')}, {item.labels.get('regime', '')})")
        ax.legend(loc="lower right", fontsize=7)
        ax.grid(True, which="both", lw=0.3, alpha=0.5)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        plt.close(fig)
    return buf.getvalue()


def roofline_markdown(item: EvidenceItem) -> list[str]:
    """Markdown lines: the plot as an embedded SVG image, or the bandwidth figures without FLOPs."""
    svg = roofline_svg(item)
    lines = ["## Roofline", "", f"{item.title} [`{item.id}`]", ""]
    if svg is None:
        return lines
    data = base64.b64encode(svg.encode()).decode()
    return lines + [f"![roofline](data:image/svg+xml;base64,{data})", ""]
