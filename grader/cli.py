"""`grader`: evaluate submissions, inspect evidence and rubrics, print schemas, serve the API."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Column, Table

from grader.errors import GraderError
from grader.settings import DrafterChoice

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
rubric_app = typer.Typer(no_args_is_help=True, help="List and show rubrics.")
app.add_typer(rubric_app, name="rubric")
err = Console(stderr=True)


class Format(str, Enum):
    json = "json"
    md = "md"


class DraftFormat(str, Enum):
    json = "json"
    md = "md"
    html = "html"  # the draft page as one self-contained file (grader.web.standalone)


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _emit(text: str, output: Optional[Path]) -> None:
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    try:
        output.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    except OSError as exc:
        _fail(f"{output}: cannot write: {exc.strerror}")


def _settings(**overrides: object):
    """Settings from the environment and the given options; a bad GRADER_* value is a GraderError line."""
    from grader.sandbox import announce
    from grader.settings import Settings

    settings = Settings.load(**{k: v for k, v in overrides.items() if v is not None})
    announce(settings)
    return settings


def _version(value: bool) -> None:
    if not value:
        return
    from grader.epoch import grader_epoch, package_version
    from grader.prompting import load_templates
    from grader.rubric import load_rubric

    try:
        settings = _settings()
        epoch = grader_epoch(load_rubric(settings.rubric, settings.rubric_dirs()), load_templates(settings.prompt_dirs()))
    except GraderError as exc:
        _fail(exc.one_line())
        return
    lines = [f"nki-grader {package_version()}", f"epoch {epoch.hash}"]
    width = max(map(len, epoch.parts))
    lines += [f"  {name:<{width}}  {value}" for name, value in epoch.parts.items()]
    _emit("\n".join(lines), None)
    raise typer.Exit(0)


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="print the version and the grader epoch (rubric, prompts, simulator, static rules)"),
) -> None:
    """LLM-assisted rubric grading of NKI kernels, built on deterministic evidence."""


@app.command()
def evaluate(
    submission: Path = typer.Argument(..., help="submission folder (with submission.toml)"),
    rubric: str = typer.Option("nki-kernel-review", "--rubric", help="rubric id or path to a rubric TOML"),
    fmt: DraftFormat = typer.Option(DraftFormat.md, "--format", help="output format (html: one self-contained file)"),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="write to FILE instead of stdout"),
    drafter: Optional[DrafterChoice] = typer.Option(None, "--drafter", help="rules (offline default) or llm"),
    model: Optional[str] = typer.Option(None, "--model", help="litellm model string, e.g. openai/gpt-4o-mini"),
    api_base: Optional[str] = typer.Option(None, "--api-base", help="OpenAI-compatible endpoint for the model"),
    samples: Optional[int] = typer.Option(None, "--samples", min=1, max=16, help="samples per criterion"),
    no_cache: bool = typer.Option(False, "--no-cache", help="do not read or write the model-reply cache"),
) -> None:
    """Draft a rubric evaluation of SUBMISSION (exit 0 whenever the evaluation completes)."""
    from grader.evaluate import evaluate as run
    from grader.reports.markdown import render_draft
    from grader.rubric import load_rubric

    try:
        settings = _settings(drafter=drafter, model=model, api_base=api_base, samples=samples,
                             use_cache=False if no_cache else None)
        from grader.consistency.store import JsonFileStore
        from grader.evaluate import as_submission

        rub = load_rubric(rubric, settings.rubric_dirs())
        sub = as_submission(submission, settings)
        draft = run(sub, rubric=rub, settings=settings, store=JsonFileStore(settings.data_dir))
    except GraderError as exc:
        _fail(exc.one_line())
        return
    if fmt is DraftFormat.html:
        from grader.web.standalone import render_standalone

        text = render_standalone(draft, dict(sub.files), rubric=rub, task_title=sub.manifest.task.title)
    else:
        text = draft.model_dump_json(indent=2) if fmt is DraftFormat.json else render_draft(draft, rub)
    _emit(text, output)


@app.command()
def evidence(
    submission: Path = typer.Argument(..., help="submission folder"),
    fmt: Format = typer.Option(Format.md, "--format"),
    output: Optional[Path] = typer.Option(None, "-o", "--output"),
) -> None:
    """Gather and print the evidence bundle for SUBMISSION (no drafting)."""
    from evidence.gather import gather
    from grader.evaluate import as_submission
    from grader.reports.markdown import render_bundle

    try:
        settings = _settings()
        bundle = gather(as_submission(submission, settings), options=settings.collector_options())
    except GraderError as exc:
        _fail(exc.one_line())
        return
    _emit(bundle.model_dump_json(indent=2) if fmt is Format.json else render_bundle(bundle), output)


@rubric_app.command("list")
def rubric_list() -> None:
    """List the rubrics found: GRADER_RUBRIC_PATH's directories, then the shipped ones."""
    from grader.resources import describe
    from grader.rubric import available_rubrics, load_rubric

    try:
        dirs = _settings().rubric_dirs()
    except GraderError as exc:
        _fail(exc.one_line())
        return
    found = available_rubrics(dirs)
    if not found:
        _fail(f"no rubrics found (searched {describe(dirs)})")
    table = Table(Column("id", no_wrap=True), "version", "criteria", "title", Column("file", overflow="fold"))
    for rid, path in found.items():
        try:
            r = load_rubric(rid, dirs)
        except GraderError as exc:
            table.add_row(rid, "-", "-", f"invalid: {exc.one_line()}", str(path))
            continue
        table.add_row(r.id, r.version, str(len(r.criteria)), r.title, str(path))
    Console().print(table)


@rubric_app.command("show")
def rubric_show(
    rubric_id: str = typer.Argument(..., help="rubric id or path"),
    fmt: Format = typer.Option(Format.md, "--format"),
) -> None:
    """Show a rubric: criteria, levels, evidence kinds and evidence rules."""
    from grader.reports.rubric import render_rubric
    from grader.rubric import load_rubric

    try:
        r = load_rubric(rubric_id, _settings().rubric_dirs())
    except GraderError as exc:
        _fail(exc.one_line())
        return
    if fmt is Format.json:
        _emit(r.model_dump_json(indent=2), None)
        return
    _emit(render_rubric(r), None)


@app.command()
def schema(names: list[str] = typer.Argument(None, help="model names (default: all)")) -> None:
    """Print the JSON Schemas of the data models (evidence, rubric, draft)."""
    from grader.schemas import json_schemas

    try:
        schemas = json_schemas(names or None)
    except KeyError as exc:
        _fail(str(exc.args[0]))
        return
    _emit(json.dumps(schemas, indent=2, sort_keys=True), None)


from grader.cli_calibration import audit, calibrate  # noqa: E402 - after the app exists
from grader.cli_doctor import doctor  # noqa: E402

app.command()(calibrate)
app.command()(audit)
app.command()(doctor)

from grader.service.cli import register as _register_service  # noqa: E402  (serve, worker, keys, db, log)

_register_service(app)


if __name__ == "__main__":
    app()
