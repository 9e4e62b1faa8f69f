"""The calibration report as one self-contained HTML file: heatmaps embedded as PNG data URIs.

Rendered with Jinja2 (autoescaped: rationales and gold text are untrusted) from the report model
alone, so the service can serve the same page for a stored run.
"""

from __future__ import annotations

import base64
import io
from functools import cache
from pathlib import Path

import jinja2

from grader.consistency.compare import CriterionAgreement
from grader.consistency.report import CalibrationReport, RunReport
from grader.errors import GraderError
from grader.reports.calibration_table import num, pct, with_ci

TEMPLATES = Path(__file__).parent / "templates"
HEATMAP_COLUMNS = 4


@cache
def template_env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pct=pct, num=num, ci=with_ci)
    return env


def heatmaps_png(panels: list[CriterionAgreement], labels: list[int]) -> str:
    """Confusion matrices (rows gold, columns draft) as a grid of annotated heatmaps; a data URI."""
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot
    import matplotlib.pyplot as plt

    if not panels:
        return ""
    cols = min(HEATMAP_COLUMNS, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.1 * cols, 3.0 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, panel in zip(axes.flat, panels):
        matrix = panel.agreement.confusion
        peak = max(1, max(max(r) for r in matrix))
        ax.imshow(matrix, cmap="Blues", vmin=0, vmax=peak)
        ax.plot([-0.5, len(labels) - 0.5], [-0.5, len(labels) - 0.5], color="#1a7f37", lw=0.8, alpha=0.5)  # agreement
        for i, row in enumerate(matrix):
            for j, count in enumerate(row):
                if count:
                    ax.text(j, i, str(count), ha="center", va="center", fontsize=10,
                            color="white" if count > peak / 2 else "black")
        ax.set_xticks(range(len(labels)), [str(x) for x in labels])
        ax.set_yticks(range(len(labels)), [str(x) for x in labels])
        ax.set_xlabel("draft score")
        ax.set_ylabel("gold score")
        verdict = "pass" if panel.verdict.passed else "FAIL"
        ax.set_title(f"{panel.criterion_id}\nn={panel.agreement.n}, {verdict}", fontsize=9,
                     color="#1a7f37" if panel.verdict.passed else "#b42318")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def criterion_titles(report: RunReport) -> dict[str, str]:
    try:
        from grader.rubric import load_rubric

        return {c.id: c.title for c in load_rubric(report.rubric.id).criteria}
    except GraderError:  # a stored run of a rubric no longer installed still renders, with ids only
        return {}


def render_calibration_html(report: CalibrationReport, *, disagreements: int = 15) -> str:
    labels = report.overall.agreement.labels
    return template_env().get_template("calibration.html.j2").render(
        r=report, titles=criterion_titles(report), rows=[*report.criteria, report.overall],
        heatmap=heatmaps_png([c for c in (*report.criteria, report.overall) if c.agreement.n], labels),
        no_pairs=[c.criterion_id for c in report.criteria if not c.agreement.n],
        worst=report.disagreements(disagreements),
        failures=[c for c in (*report.criteria, report.overall) if not c.verdict.passed],
    )
