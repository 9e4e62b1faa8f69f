"""API-key authentication: every route declares the least role it needs (`require(role)`), or `public`.

Tokens come as `Authorization: Bearer <token>`. With GRADER_AUTH=off (local single-user use, refused
on non-loopback binds) every caller is the local admin user.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool

from grader.store.keys import LOCAL_USER, ROLES, Principal, authenticate

bearer = HTTPBearer(auto_error=False, description="an API key created with `grader keys create`")
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def require(role: str) -> Callable[..., object]:
    """A dependency that authenticates the caller and checks the role; returns the Principal."""
    if role not in ROLES:
        raise ValueError(role)

    async def principal(request: Request, creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> Principal:
        if request.app.state.settings.auth == "off":
            who = LOCAL_USER
        else:
            if creds is None or not creds.credentials:
                raise HTTPException(401, "missing API key: send 'Authorization: Bearer <token>'", headers=_CHALLENGE)
            found = await run_in_threadpool(authenticate, request.app.state.store, creds.credentials)
            if found is None:
                raise HTTPException(401, "invalid or revoked API key", headers=_CHALLENGE)
            who = found
        if not who.may(role):
            raise HTTPException(403, f"this route needs the {role} role; key {who.name!r} has {who.role}")
        request.state.principal = who
        return who

    principal.required_role = role  # type: ignore[attr-defined]  # read by the role-matrix test
    return principal


def public() -> None:
    """Marks a route that needs no key (liveness, readiness, metrics)."""


public.required_role = None  # type: ignore[attr-defined]
