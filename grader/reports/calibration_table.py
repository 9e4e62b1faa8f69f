"""Terminal rendering of calibration reports (rich tables): per criterion, overall, reviewers."""

from __future__ import annotations

from rich.table import Table

from grader.consistency.compare import CriterionAgreement
from grader.consistency.report import CalibrationReport, ReviewerCalibration


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:+.{digits}f}" if x < 0 else f"{x:.{digits}f}"


def with_ci(fig, percent: bool = False) -> str:
    fmt = pct if percent else num
    if fig.value is None:
        return "undefined"
    if fig.low is None or fig.high is None:
        return fmt(fig.value)
    return f"{fmt(fig.value)} [{fmt(fig.low)}, {fmt(fig.high)}]"


def _row(c: CriterionAgreement) -> list[str]:
    a = c.agreement
    verdict = "[green]pass[/]" if c.verdict.passed else "[red]FAIL[/]"
    return [c.criterion_id, str(a.n), pct(a.exact.value), pct(a.adjacent.value), with_ci(a.qwk),
            num(a.smd.value), pct(c.unscored_rate), verdict]


def criteria_table(report: CalibrationReport) -> Table:
    """One row per criterion and the pooled row; full CIs are in the JSON and HTML reports."""
    title = (f"{report.set.name}: {report.drafter.name}{' ' + report.drafter.model if report.drafter.model else ''} "
             f"vs gold, {report.set.items} items, {report.epoch.hash}")
    table = Table("criterion", "n", "exact", "adj.", "QWK [95% CI]", "SMD", "unscored", "gate",
                  title=title, title_justify="left")
    for c in report.criteria:
        table.add_row(*_row(c))
    table.add_section()
    table.add_row(*_row(report.overall))
    return table


def gate_failures(report: CalibrationReport) -> list[str]:
    """One line per failing criterion: what failed, with figures and thresholds."""
    return [f"{c.criterion_id}: {c.verdict.summary}" for c in (*report.criteria, report.overall) if not c.verdict.passed]


def reviewers_table(rc: ReviewerCalibration, report: CalibrationReport) -> list[Table]:
    cert = Table("reviewer", "items", "QWK (overall)", *[c.criterion_id for c in report.criteria],
                 title=f"Reviewer certification ({rc.source})", title_justify="left")
    for rep in rc.reviewers:
        marks = ["[green]certified[/]" if c.verdict.passed else f"[red]{c.verdict.summary.removeprefix('failed gate: ')}[/]"
                 for c in rep.criteria]
        cert.add_row(rep.reviewer, str(rep.items), with_ci(rep.overall.agreement.qwk), *marks)
    deg = Table("criterion", "n", "model QWK", "human QWK", "degradation", "human alpha", "flag",
                title="Degradation (model-gold minus human-gold, on the reviewed items)", title_justify="left")
    for d in rc.degradation:
        deg.add_row(d.criterion_id, str(d.n), num(d.model_qwk), num(d.human_qwk), num(d.qwk), num(d.human_alpha),
                    "[red]below gate[/]" if d.flagged else "")
    return [cert, deg]


def audit_tables(report) -> list[Table]:
    """Perturbation stability per criterion and perturbation, unstable cases, injection and drift."""
    perts = list(dict.fromkeys(r.perturbation for r in report.perturbation))
    stab = Table("criterion", *perts, title=f"Perturbation stability on {report.set.name} ({report.set.items} items, "
                 f"{report.graded_variants} variants graded)", title_justify="left")
    for crit in dict.fromkeys(r.criterion_id for r in report.perturbation):
        cells = []
        for p in perts:
            row = next(r for r in report.perturbation if r.perturbation == p and r.criterion_id == crit)
            text = f"{pct(row.rate)} ({row.stable}/{row.n})" if row.n else "n/a"
            cells.append(text if row.rate in (None, 1.0) else f"[red]{text}[/]")
        stab.add_row(crit, *cells)
    tables = [stab]
    if report.unstable:
        cases = Table("item", "perturbation", "criterion", "original", "perturbed", title="Unstable cases", title_justify="left")
        for c in report.unstable:
            cases.add_row(c.item, c.perturbation, c.criterion_id, str(c.original), str(c.perturbed))
        tables.append(cases)
    if report.drift:
        d = report.drift
        drift = Table("criterion", "n", "changed", "QWK between epochs", "exact",
                      title=f"Drift against {d.against} ({d.against_epoch}{', same epoch' if d.same_epoch else ''})",
                      title_justify="left")
        for r in d.rows:
            drift.add_row(r.criterion_id, str(r.n), str(r.changed) if not r.changed else f"[yellow]{r.changed}[/]",
                          num(r.qwk), pct(r.exact))
        tables.append(drift)
    return tables
