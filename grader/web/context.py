"""Who is asking and how to answer: the per-request page context, role checks, CSRF on every form.

Every page declares the least role it needs with `page(role)` (the same ranking as the JSON API's
`require(role)`); a visitor without a session is sent to the sign-in page, a signed-in user with too
low a role gets a 403 page. `form(role)` adds the same-origin and CSRF checks every POST needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import quote

from fastapi import Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import HTMLResponse, RedirectResponse, Response

from grader.settings import Settings
from grader.store.db import Store
from grader.store.keys import LOCAL_USER, ROLES, Principal, list_keys
from grader.web import assets
from grader.web.draft_view import ALERT_FLAGS
from grader.web.session import (
    Session,
    SessionCodec,
    csrf_ok,
    live_principal,
    same_origin,
)
from grader.web.templating import render

UI = "/ui"
# (key, label, path, least role): the main navigation, shown to those who may open each page.
NAV = [
    ("queue", "Review queue", "/queue", "submitter"),
    ("certification", "Certification", "/reviewers/me", "reviewer"),
    ("calibration", "Calibration", "/calibration", "lead"),
    ("audits", "Audits & drift", "/audits", "lead"),
    ("audit-log", "Audit log", "/audit-log", "lead"),
]


class LoginRequired(Exception):
    def __init__(self, next_path: str, message: str | None = None) -> None:
        self.next_path, self.message = next_path, message


class PageError(Exception):
    """An error page: status and one line saying what is wrong."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def host_state(request: Request):  # type: ignore[no-untyped-def]
    """The API application's state (store, settings): the pages are mounted inside it."""
    return request.app.state.host.state


def codec(request: Request) -> SessionCodec:
    web = request.app.state
    if getattr(web, "codec", None) is None:
        web.codec = SessionCodec(host_state(request).settings)
    return web.codec


@dataclass
class PageContext:
    request: Request
    store: Store
    settings: Settings
    who: Principal | None
    session: Session
    new_session: bool = False  # the session must be (re)written to the cookie
    _names: Mapping[str, str] | None = None

    @property
    def auth_off(self) -> bool:
        return self.settings.auth == "off"

    def names(self) -> Mapping[str, str]:
        """Key id -> key name, to show people by name where the records keep key ids."""
        if self._names is None:
            self._names = {k.id: k.name for k in list_keys(self.store)}
        return self._names

    def base(self) -> dict[str, object]:
        who = self.who
        nav = [(k, label, UI + path) for k, label, path, role in NAV if who is not None and who.may(role)]
        return {"ui": UI, "who": who, "csrf": self.session.csrf, "auth_off": self.auth_off, "nav_items": nav,
                "asset_version": assets.stylesheet_version(), "standalone": False, "alert_flags": ALERT_FLAGS,
                "flash": None, "nav": None}

    def html(self, template: str, status: int = 200, **context: object) -> HTMLResponse:
        response = HTMLResponse(render(template, **(self.base() | context)), status_code=status)
        self.finish(response)
        return response

    def redirect(self, url: str) -> RedirectResponse:
        response = RedirectResponse(url, status_code=303)
        self.finish(response)
        return response

    def finish(self, response: Response) -> None:
        if self.new_session:
            codec(self.request).save(response, self.session, self.request)


def _next_path(request: Request) -> str:
    path = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return path if request.method == "GET" else UI + "/queue"


async def _context(request: Request, role: str | None) -> PageContext:
    state = host_state(request)
    session = codec(request).load(request)
    fresh = session is None
    session = session or Session.fresh()
    who: Principal | None = None
    if state.settings.auth == "off":
        who = LOCAL_USER
    elif session.key_id:
        who = await run_in_threadpool(live_principal, state.store, session.key_id)
        if who is None and role is not None:
            raise LoginRequired(_next_path(request), "Your key was revoked or your session ended; sign in again.")
    if role is not None:
        if who is None:
            raise LoginRequired(_next_path(request))
        if not who.may(role):
            raise PageError(403, f"This page needs the {role} role; key {who.name!r} has {who.role}.")
    request.state.principal = who
    return PageContext(request, state.store, state.settings, who, session, new_session=fresh)


def page(role: str | None) -> Callable[..., object]:
    """A dependency: the page context of a caller holding at least `role` (None: anyone)."""
    if role is not None and role not in ROLES:
        raise ValueError(role)

    async def dependency(request: Request) -> PageContext:
        return await _context(request, role)

    dependency.required_role = role  # type: ignore[attr-defined]  # read by the pages' role-matrix test
    return dependency


def form(role: str | None) -> Callable[..., object]:
    """A POST dependency: `page(role)` plus same-origin and CSRF checks; the parsed form is on the context."""

    async def dependency(request: Request) -> PageContext:
        if not same_origin(request):
            raise PageError(403, "Cross-site form posts are refused.")
        ctx = await _context(request, role)
        data = await request.form()
        if not csrf_ok(ctx.session, data.get("csrf") if isinstance(data.get("csrf"), str) else None):
            raise PageError(403, "The form's security token is missing or stale; reload the page and try again.")
        request.state.form = {k: v for k, v in data.items() if isinstance(v, str)}
        request.state.form_lists = {k: [v for v in data.getlist(k) if isinstance(v, str)] for k in data}  # checkboxes
        return ctx

    dependency.required_role = role  # type: ignore[attr-defined]
    return dependency


def login_redirect(exc: LoginRequired) -> RedirectResponse:
    url = f"{UI}/login?next={quote(exc.next_path, safe='/')}"
    if exc.message:
        url += "&expired=1"
    return RedirectResponse(url, status_code=303)
