"""The FastAPI application factory. Settings and the store are built here (or passed in), never at import time."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from evidence.validation import one_line
from grader.api import admin, audits, calibration, evaluations, ops, routes
from grader.api.guards import plain_request
from grader.api.metrics import build_registry
from grader.api.middleware import RequestContext
from grader.errors import GraderError, RubricError, SubmissionError, SubmissionTooLarge
from grader.service.config import open_store, service_settings
from grader.service.errors import QueueFull
from grader.sandbox import announce
from grader.settings import Settings
from grader.store import migrate
from grader.store.db import Store, StoreError
from grader.web.app import mount as mount_pages
from grader.web.warm import settle_heap
from grader.web.warm import warm as warm_pages

log = logging.getLogger("grader.api")


class BodySizeLimit:
    """Reject bodies over the limit with 413 before they are read into memory."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._reject(scope, receive, send)
            return
        seen = 0

        async def counted() -> dict:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise _TooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge:
            await self._reject(scope, receive, send)

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse({"detail": f"request body exceeds {self.max_bytes} bytes"}, status_code=413)
        await response(scope, receive, send)


class _TooLarge(Exception):
    pass


def _one_line_validation(_: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    return JSONResponse({"detail": one_line(errors), "errors": jsonable(errors)}, status_code=422)


def jsonable(errors: list) -> list:
    return [{"loc": [str(p) for p in e.get("loc", ())], "msg": str(e.get("msg")), "type": e.get("type")} for e in errors]


def _status(exc: GraderError) -> int:
    if isinstance(exc, SubmissionTooLarge):
        return 413
    if isinstance(exc, SubmissionError | RubricError):
        return 422
    if isinstance(exc, StoreError):
        return 503
    return getattr(exc, "status", 400)


def _grader_error(_: Request, exc: GraderError) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after_s)} if isinstance(exc, QueueFull) else None
    return JSONResponse({"detail": exc.one_line()}, status_code=_status(exc), headers=headers)


def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
    detail = " ".join(str(exc.detail).split())
    return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=getattr(exc, "headers", None))


def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled error", exc_info=exc)
    return JSONResponse({"detail": f"internal error ({type(exc).__name__}); see the server log"}, status_code=500)


def create_app(settings: Settings | None = None, store: Store | None = None, *, migrate_db: bool = True,
               settle: bool = False) -> FastAPI:
    """The API. Without a `store`, the configured database is opened (and migrated) at start-up. The
    pages are warmed before the first request; `settle` (the serving process) also freezes the heap
    start-up leaves (grader.web.warm)."""
    settings = service_settings(settings or Settings())
    announce(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = app.state.store is None
        if own:
            app.state.store = open_store(settings)
            if migrate_db:
                migrate.upgrade(app.state.store)
        _attach_metrics(app)
        await anyio.to_thread.run_sync(warm_pages, settings.rubric_dirs())  # before the first request, not in it
        if settle:
            settle_heap()
        yield
        if own:
            app.state.store.dispose()

    app = FastAPI(
        title="NKI Grader",
        version="0.2.0",
        description="Draft rubric evaluations of NKI kernels from deterministic evidence, durable jobs, "
                    "human review and sign-off. Drafts are never final until signed off.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.store = store
    if store is not None:
        _attach_metrics(app)
    app.add_exception_handler(RequestValidationError, _one_line_validation)  # type: ignore[arg-type]
    app.add_exception_handler(GraderError, _grader_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected)
    for router in (ops.router, evaluations.router, calibration.router, audits.router, admin.router, routes.router):
        app.include_router(router, dependencies=[Depends(plain_request)])
    mount_pages(app)  # the reviewer pages at /ui (grader.web), over the same service functions
    # JSON encoding inflates text; allow headroom over the raw submission limit.
    app.add_middleware(BodySizeLimit, max_bytes=2 * settings.max_submission_bytes + 64 * 1024)
    app.add_middleware(RequestContext)
    return app


def _attach_metrics(app: FastAPI) -> None:
    if getattr(app.state, "metrics", None) is None:
        app.state.metrics, app.state.http_requests, app.state.http_duration = build_registry(app.state.store)
