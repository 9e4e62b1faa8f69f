"""Checks every API request passes before its handler: input the handlers' models cannot express."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.exceptions import HTTPException

from evidence.validation import field_path

NUL = "\x00"
Loc = tuple[str | int, ...]


def _nul_at(value: Any, loc: Loc) -> Loc | None:
    """The location of the first string (key or value) holding a NUL character, if any."""
    if isinstance(value, str):
        return loc if NUL in value else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _nul_at(key, loc) or _nul_at(item, (*loc, key))
        if found:
            return found
    return None


def _refuse_nul(loc: Loc | None) -> None:
    # No text the service stores or looks up may hold NUL: PostgreSQL refuses it (a 500 otherwise), and
    # no name, id, reason or kernel source is meaningful with one.
    if loc:
        raise HTTPException(422, f"{field_path(loc)}: contains a NUL (0x00) character")


async def plain_request(request: Request) -> None:
    """Every query parameter given once (a repeated one is ambiguous), and no NUL in the query, the
    path or a JSON body."""
    seen: set[str] = set()
    for key, value in request.query_params.multi_items():
        if key in seen:
            raise HTTPException(422, f"query.{key}: given more than once; give it once")
        seen.add(key)
        _refuse_nul(_nul_at(key, ("query",)) or _nul_at(value, ("query", key)))
    for name, value in request.path_params.items():
        _refuse_nul(_nul_at(value, ("path", name)))
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = await request.json()
        except ValueError:  # malformed JSON: the handler's validation names it
            return
        _refuse_nul(_nul_at(body, ("body",)))
