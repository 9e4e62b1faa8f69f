"""The pages' Jinja2 environment: templates and static assets are package data, found through
importlib.resources, so an installed wheel serves the same pages as a checkout. Autoescaping is on
for every template: submitted text (source, notes, model output) can only ever render as text."""

from __future__ import annotations

from datetime import datetime
from functools import cache
from importlib import resources

import jinja2

from grader.reports.calibration_table import num, pct


def _when(value: datetime | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value.replace("T", " ")[:19]
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _short(value: str | None, n: int = 12) -> str:
    return "-" if not value else value if len(value) <= n else value[:n] + "…"


def _metric(value: float) -> str:
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:.4g}"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("grader.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pct=pct, num=num, when=_when, short=_short, metric=_metric)
    return env


def render(template: str, **context: object) -> str:
    return environment().get_template(template).render(**context)


@cache
def static_text(name: str) -> str:
    """A static asset's text (the stylesheet), read once from the package."""
    return resources.files("grader.web").joinpath("static").joinpath(name).read_text(encoding="utf-8")
