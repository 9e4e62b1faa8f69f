"""Per request: a request id (the caller's X-Request-ID when well-formed, else a new one), one JSON
log line, and the HTTP metrics."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from grader.service.logs import request_id

log = logging.getLogger("grader.http")
_GOOD_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestContext:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        rid = given if _GOOD_ID.match(given) else uuid.uuid4().hex
        token = request_id.set(rid)
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = getattr(scope.get("route"), "path", "unmatched")
            app = scope.get("app")
            if app is not None and hasattr(app.state, "http_requests"):
                app.state.http_requests.labels(scope["method"], route, str(status)).inc()
                app.state.http_duration.labels(route).observe(elapsed)
            principal = getattr(scope.get("state", {}).get("principal"), "id", None) if isinstance(scope.get("state"), dict) else None
            log.info("request", extra={"method": scope["method"], "path": scope["path"], "route": route,
                                       "status": status, "duration_ms": round(elapsed * 1000, 1), "key": principal})
            request_id.reset(token)
