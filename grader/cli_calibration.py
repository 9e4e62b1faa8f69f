"""`grader calibrate` and `grader audit`: runs over gold sets, with progress, tables, JSON and HTML.

Exit codes: 0 when every gate passes (calibrate) or the audit is stable; 1 when a gate fails or
the audit finds instability or drift; 2 with a one-line reason on bad input.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from grader.errors import GraderError

err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def parse_gates(values: list[str] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for raw in values or []:
        name, sep, value = raw.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise GraderError(f"--gate {raw!r}: expected NAME=NUMBER, e.g. qwk_min=0.6") from None
    return out


def _progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    TextColumn("{task.fields[last]}"), console=err, transient=True)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise GraderError(f"cannot write: {exc.strerror}", where=str(path)) from exc


def _setup(set_path: Path, rubric: str, executor: str, workers: int, address: str | None, no_store: bool, **overrides):
    """Settings, executor, store, rubric and the validated set: everything checked before grading."""
    from grader.consistency.executor import make_executor
    from grader.consistency.goldset import load_gold_set
    from grader.consistency.store import JsonFileStore
    from grader.rubric import load_rubric
    from grader.settings import Settings
    from grader.submission import Limits

    if overrides.pop("no_cache", False):
        overrides["use_cache"] = False
    settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    ex = make_executor(executor, workers, address)
    store = None if no_store else JsonFileStore(settings.data_dir)
    rub = load_rubric(rubric, settings.rubric_dirs())
    return settings, ex, store, rub, load_gold_set(set_path, rub, limits=Limits.from_settings(settings))


def calibrate(
    set_path: Path = typer.Argument(..., metavar="SET", help="calibration set folder (items with gold.toml)"),
    rubric: str = typer.Option("nki-kernel-review", "--rubric", help="rubric id or path"),
    drafter: Optional[str] = typer.Option(None, "--drafter", help="rules (offline default) or llm"),
    model: Optional[str] = typer.Option(None, "--model", help="litellm model string"),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible endpoint"),
    samples: Optional[int] = typer.Option(None, "--samples", min=1, max=16, help="samples per criterion"),
    workers: int = typer.Option(1, "--workers", min=1, max=64, help="items graded at once"),
    executor: str = typer.Option("local", "--executor", help="local (process pool) or ray"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (default: start a local Ray)"),
    reviewers: Optional[Path] = typer.Option(None, "--reviewers", help="reviews.csv: reviewer,item,criterion,score"),
    gate: Optional[list[str]] = typer.Option(None, "--gate", help="override a gate, e.g. --gate qwk_min=0.6"),
    resamples: int = typer.Option(1000, "--resamples", min=0, help="bootstrap resamples for the 95% CIs"),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="write the JSON report to FILE"),
    html: Optional[Path] = typer.Option(None, "--html", help="write the self-contained HTML report to FILE"),
    no_store: bool = typer.Option(False, "--no-store", help="do not save the run in the data directory"),
    no_cache: bool = typer.Option(False, "--no-cache", help="do not read or write the model-reply cache"),
) -> None:
    """Grade every item of SET and measure the drafter against gold (exit 1 when a gate fails)."""
    from grader.consistency.calibrate import run_calibration
    from grader.consistency.executor import make_executor
    from grader.consistency.store import JsonFileStore
    from grader.reports.calibration_table import criteria_table, gate_failures, reviewers_table
    from grader.settings import Settings

    try:
        settings = Settings(**{k: v for k, v in dict(drafter=drafter, model=model, api_base=api_base, samples=samples,
                                                     use_cache=False if no_cache else None).items() if v is not None})
        ex = make_executor(executor, workers, address)
        store = None if no_store else JsonFileStore(settings.data_dir)
        with _progress() as bar:
            task = bar.add_task(f"grading {set_path.name}", total=None, last="")

            def on_done(item: str, result) -> None:
                bar.update(task, advance=1, last=item + (" (error)" if result.error else ""))

            from grader.consistency.goldset import load_gold_set  # validate first, to size the bar
            from grader.rubric import load_rubric

            rub = load_rubric(rubric, settings.rubric_dirs())
            from grader.submission import Limits

            gold = load_gold_set(set_path, rub, limits=Limits.from_settings(settings))
            bar.update(task, total=len(gold.items))
            report = run_calibration(gold, rubric=rub, settings=settings, executor=ex, reviews=reviewers,
                                     gate_overrides=parse_gates(gate), resamples=resamples, progress=on_done, store=store)
        if hasattr(ex, "shutdown"):
            ex.shutdown()
        if output:
            _write(output, report.model_dump_json(indent=2))
        if html:
            from grader.reports.calibration_html import render_calibration_html

            _write(html, render_calibration_html(report))
    except GraderError as exc:
        _fail(exc.one_line())
        return
    out = Console(width=max(Console().width, 104))  # the table's width; wider terminals keep theirs
    out.print(criteria_table(report))
    for line in gate_failures(report):
        out.print(f"  [red]{line}[/]", highlight=False)
    if report.reviewers:
        for table in reviewers_table(report.reviewers, report):
            out.print(table)
    errors = [i for i in report.items if i.error]
    for i in errors:
        out.print(f"[red]item {i.item} not graded:[/] {i.error}", highlight=False)
    saved = "" if no_store else f"; saved as {report.id}"
    out.print(f"{'all gates pass' if report.passed else 'gates FAIL'} ({report.duration_s:.1f} s{saved})")
    raise typer.Exit(0 if report.passed else 1)


def audit(
    set_path: Path = typer.Argument(..., metavar="SET", help="audit set folder (items with gold.toml)"),
    against: Optional[str] = typer.Option(None, "--against", help="an earlier EPOCH (from the run store) or a report.json"),
    rubric: str = typer.Option("nki-kernel-review", "--rubric", help="rubric id or path"),
    drafter: Optional[str] = typer.Option(None, "--drafter", help="rules (offline default) or llm"),
    model: Optional[str] = typer.Option(None, "--model", help="litellm model string"),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible endpoint"),
    samples: Optional[int] = typer.Option(None, "--samples", min=1, max=16, help="samples per criterion"),
    workers: int = typer.Option(1, "--workers", min=1, max=64, help="variants graded at once"),
    executor: str = typer.Option("local", "--executor", help="local (process pool) or ray"),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address (default: start a local Ray)"),
    perturbation: Optional[list[str]] = typer.Option(None, "--perturbation", help="rename, reorder, comments, injection (default: all)"),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="write the JSON report to FILE"),
    html: Optional[Path] = typer.Option(None, "--html", help="write the self-contained HTML report to FILE"),
    no_store: bool = typer.Option(False, "--no-store", help="do not save the audit in the data directory"),
    no_cache: bool = typer.Option(False, "--no-cache", help="do not read or write the model-reply cache"),
) -> None:
    """Re-grade SET: drift against earlier results, and perturbation invariance (exit 1 if unstable)."""
    from grader.consistency.audit import run_audit
    from grader.consistency.perturb import PERTURBATIONS
    from grader.reports.calibration_table import audit_tables

    try:
        settings, ex, store, rub, gold = _setup(set_path, rubric, executor, workers, address, no_store, drafter=drafter,
                                                model=model, api_base=api_base, samples=samples, no_cache=no_cache)
        chosen = tuple(perturbation or PERTURBATIONS)
        with _progress() as bar:
            task = bar.add_task(f"auditing {set_path.name}", total=None, last="")
            report = run_audit(gold, rubric=rub, settings=settings, executor=ex, against=against, perturbations=chosen,
                               store=store, progress=lambda item, r: bar.update(task, advance=1, last=item))
        if hasattr(ex, "shutdown"):
            ex.shutdown()
        if output:
            _write(output, report.model_dump_json(indent=2))
        if html:
            from grader.reports.audit_html import render_audit_html

            _write(html, render_audit_html(report))
    except GraderError as exc:
        _fail(exc.one_line())
        return
    out = Console(width=max(Console().width, 104))
    for table in audit_tables(report):
        out.print(table)
    if report.injection:
        missed = [r.item for r in report.injection if not r.detected]
        raised = [f"{r.item} ({', '.join(r.raised)})" for r in report.injection if r.raised]
        out.print(f"injection comment detected on {len(report.injection) - len(missed)}/{len(report.injection)} items"
                  + (f"; [red]missed: {', '.join(missed)}[/]" if missed else "")
                  + (f"; [red]raised scores: {'; '.join(raised)}[/]" if raised else "; never raised a score"), highlight=False)
    for line in report.errors:
        out.print(f"[red]not graded:[/] {line}", highlight=False)
    saved = "" if no_store else f"; saved as {report.id}"
    verdict = "stable" if report.passed else "UNSTABLE" if not report.invariant else "FAILED"
    out.print(f"audit {verdict} ({report.duration_s:.1f} s{saved})")
    raise typer.Exit(0 if report.passed else 1)
