"""The FastAPI application factory. Settings are built here (or passed in), never at import time."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from grader.api.routes import router
from grader.settings import Settings


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
    first = errors[0] if errors else {"loc": (), "msg": "invalid request"}
    where = ".".join(str(p) for p in first.get("loc", ()))
    return JSONResponse({"detail": f"{where}: {first.get('msg')}", "errors": jsonable(errors)}, status_code=422)


def jsonable(errors: list) -> list:
    return [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg")), "type": e.get("type")} for e in errors]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    app = FastAPI(
        title="NKI Grader",
        version="0.1.0",
        description="Draft rubric evaluations of NKI kernels from deterministic evidence. Drafts are never final.",
    )
    app.state.settings = settings
    app.add_exception_handler(RequestValidationError, _one_line_validation)  # type: ignore[arg-type]
    app.include_router(router)
    # JSON encoding inflates text; allow headroom over the raw submission limit.
    app.add_middleware(BodySizeLimit, max_bytes=2 * settings.max_submission_bytes + 64 * 1024)
    return app
