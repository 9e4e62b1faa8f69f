"""The reviewer pages as a sub-application mounted at /ui inside the API application.

Mounted, the pages share the API's store, settings, request ids and logs, while keeping their own
error pages (HTML, one line saying what is wrong) and security headers, and staying out of the
OpenAPI schema. Page handlers call the same service functions as the JSON routers.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import HTMLResponse, RedirectResponse, Response

from grader.errors import GraderError
from grader.service.logs import request_id
from grader.web import assets
from grader.web.context import UI, LoginRequired, PageError, login_redirect
from grader.web.templating import render

log = logging.getLogger("grader.web")

SECURITY_HEADERS = {
    "content-security-policy": assets.SERVED_CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}


async def security_headers(request: Request, call_next) -> Response:  # type: ignore[no-untyped-def]
    """Every page answer carries the strict CSP (unless it set a stricter-scoped one); pages are private,
    so none is cached except the versioned stylesheet."""
    response = await call_next(request)
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if not request.url.path.endswith(".css"):
        response.headers["cache-control"] = "no-store"
    return response


def error_page(status: int, message: str) -> HTMLResponse:
    body = render("error.html.j2", status=status, message=" ".join(message.split()), ui=UI, who=None, nav=None,
                  nav_items=(), standalone=False, asset_version=assets.stylesheet_version(), flash=None,
                  request_id=request_id.get())
    return HTMLResponse(body, status_code=status)


def _grader_error(_: Request, exc: GraderError) -> Response:
    return error_page(getattr(exc, "status", 400), exc.one_line())


def _page_error(_: Request, exc: PageError) -> Response:
    return error_page(exc.status, exc.message)


def _http_error(_: Request, exc: StarletteHTTPException) -> Response:
    detail = exc.detail if exc.status_code != 404 or exc.detail != "Not Found" else "There is no such page."
    return error_page(exc.status_code, str(detail))


def _invalid(_: Request, exc: RequestValidationError) -> Response:
    first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body"))
    return error_page(422, f"{where}: {first.get('msg')}" if where else str(first.get("msg")))


def _login(_: Request, exc: LoginRequired) -> Response:
    return login_redirect(exc)


def _unexpected(_: Request, exc: Exception) -> Response:
    log.error("unhandled error in a page", exc_info=exc)
    return error_page(500, f"Internal error ({type(exc).__name__}); request id {request_id.get()}.")


def create_web_app(host: FastAPI) -> FastAPI:
    from grader.web.pages import audits, calibration, evaluation, logbook, login, queue, static

    web = FastAPI(openapi_url=None, docs_url=None, redoc_url=None, title="NKI Grader pages")
    web.state.host = host
    web.state.codec = None
    web.add_exception_handler(LoginRequired, _login)  # type: ignore[arg-type]
    web.add_exception_handler(PageError, _page_error)  # type: ignore[arg-type]
    web.add_exception_handler(GraderError, _grader_error)  # type: ignore[arg-type]
    web.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    web.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    web.add_exception_handler(Exception, _unexpected)
    for module in (login, queue, evaluation, calibration, audits, logbook, static):
        web.include_router(module.router)
    web.middleware("http")(security_headers)
    return web


def mount(host: FastAPI) -> None:
    """Serve the pages under /ui of the API application; `/` leads there."""
    host.mount(UI, create_web_app(host), name="ui")

    async def home(_: Request) -> Response:
        return RedirectResponse(f"{UI}/queue", status_code=307)

    host.add_route("/", home, include_in_schema=False)
