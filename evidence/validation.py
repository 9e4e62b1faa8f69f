"""Pydantic validation errors as one line: the field path of the first error and a plain message.

Used wherever a model validates outside input (manifests, claims files, rubrics, settings, API
bodies), so every such error reads the same way: `inputs[0].dtype: unknown key`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

_PLAIN = {"extra_forbidden": "unknown key", "missing": "missing required key"}


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """('inputs', 0, 'dtype') -> 'inputs[0].dtype'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def error_message(err: dict[str, Any]) -> str:
    kind = err.get("type", "")
    if kind == "value_error" and "error" in (err.get("ctx") or {}):
        return str(err["ctx"]["error"])  # our own validators' message, without pydantic's "Value error, " prefix
    return _PLAIN.get(kind, str(err.get("msg", "invalid value")))


def _errors(exc: ValidationError | Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return list(exc.errors() if isinstance(exc, ValidationError) else exc)


def first_error(exc: ValidationError | Sequence[dict[str, Any]]) -> tuple[str, str]:
    """(field path, message) of the first error; also takes the error list of FastAPI's RequestValidationError."""
    errors = _errors(exc)
    if not errors:
        return "", "invalid value"
    return field_path(errors[0].get("loc", ())), error_message(errors[0])


def one_line(exc: ValidationError | Sequence[dict[str, Any]], where: str | None = None) -> str:
    """'<where>: <field>: <message>' (+ how many more errors), on one line."""
    path, message = first_error(exc)
    more = len(_errors(exc)) - 1
    text = ": ".join(p for p in (where, path, message) if p) + (f" (and {more} more error{'s' * (more > 1)})" if more > 0 else "")
    return " ".join(text.split())
