"""Checks every API request passes before its handler: input the handlers' models cannot express."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from starlette.exceptions import HTTPException

NUL = "\x00"


def _nul_at(value: Any, where: str) -> str | None:
    """The location of the first string (key or value) holding a NUL character, if any."""
    if isinstance(value, str):
        return where if NUL in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _nul_at(key, where) or _nul_at(item, f"{where}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _nul_at(item, f"{where}.{i}")
            if found:
                return found
    return None


def _refuse_nul(where: str | None) -> None:
    # No text the service stores or looks up may hold NUL: PostgreSQL refuses it (a 500 otherwise), and
    # no name, id, reason or kernel source is meaningful with one.
    if where:
        raise HTTPException(422, f"{where}: contains a NUL (0x00) character")


async def plain_request(request: Request) -> None:
    """Every query parameter given once (a repeated one is ambiguous), and no NUL in the query, the
    path or a JSON body."""
    seen: set[str] = set()
    for key, value in request.query_params.multi_items():
        if key in seen:
            raise HTTPException(422, f"query.{key}: given more than once; give it once")
        seen.add(key)
        _refuse_nul(_nul_at(key, "query") or _nul_at(value, f"query.{key}"))
    for name, value in request.path_params.items():
        _refuse_nul(_nul_at(value, f"path.{name}"))
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = await request.json()
        except ValueError:  # malformed JSON: the handler's validation names it
            return
        _refuse_nul(_nul_at(body, "body"))
