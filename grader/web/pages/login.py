"""Sign in with an API key (the session cookie is issued here) and sign out."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from grader.store.keys import authenticate
from grader.web.context import UI, PageContext, form, page
from grader.web.session import Session

router = APIRouter()


def safe_next(target: str | None) -> str:
    """Only a path of these pages may follow sign-in (never another site)."""
    if target and target.startswith(UI + "/") and not target.startswith("//") and "\\" not in target:
        return target
    return UI + "/queue"


@router.get("/login")
def login_page(ctx: PageContext = Depends(page(None)), next: str | None = Query(None, max_length=2000),
               expired: int = Query(0, ge=0, le=1)) -> Response:
    if ctx.who is not None:
        return ctx.redirect(safe_next(next))
    message = "Your key was revoked or your session ended; sign in again." if expired else None
    return ctx.html("login.html.j2", next=safe_next(next), error=message, status=401 if expired else 200)


@router.post("/login")
async def sign_in(request: Request, ctx: PageContext = Depends(form(None))) -> Response:
    data = request.state.form
    token, target = data.get("token", "").strip(), safe_next(data.get("next"))
    who = await run_in_threadpool(authenticate, ctx.store, token) if token else None
    if who is None:
        return ctx.html("login.html.j2", next=target, status=401,
                        error="That API key is not valid (unknown or revoked)." if token else "Enter your API key.")
    ctx.session, ctx.new_session, ctx.who = Session.fresh(who.id), True, who  # a new CSRF token at sign-in
    return ctx.redirect(target)


@router.post("/logout")
def sign_out(ctx: PageContext = Depends(form(None))) -> Response:
    ctx.session, ctx.new_session = Session.fresh(), True
    return ctx.redirect(f"{UI}/login")
