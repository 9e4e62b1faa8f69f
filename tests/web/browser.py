"""A live server on loopback and Debian's Chromium driven by Playwright (no browser download: the
system `chromium` is passed as `executable_path`). Shared by the browser tests and the script that
regenerates docs/screenshots."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import uvicorn

# As root Chromium needs --no-sandbox; the others keep an offline machine's Chromium from
# flooding refused connections (component updates, sync, background networking).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--no-first-run", "--disable-gpu", "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("GRADER_CHROMIUM"), shutil.which("chromium"), "/usr/bin/chromium"):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


@dataclass
class LiveServer:
    """Serve an ASGI app from a thread on a free loopback port."""

    app: object
    url: str = ""
    _server: uvicorn.Server | None = None
    _thread: threading.Thread | None = None
    _socket: socket.socket | None = field(default=None, repr=False)

    def __enter__(self) -> LiveServer:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._socket.bind(("127.0.0.1", 0))
        port = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(self.app, log_level="warning", lifespan="on")  # type: ignore[arg-type]
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the live server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.should_exit = True
        self._thread.join(timeout=10)
        if self._socket is not None:
            self._socket.close()


@contextmanager
def chromium() -> Iterator[object]:
    """A headless Chromium (Playwright's Browser)."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise RuntimeError("no chromium executable (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class PageWatch:
    """Collects what must never happen on our pages: CSP violations, script errors, off-site requests."""

    def __init__(self, page, allowed_prefixes: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
        self.problems: list[str] = []
        # A refused form answers 4xx on purpose (that page is checked by the test); any other resource must load.
        page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}")
                if (m.type == "error" and not m.text.startswith("Failed to load resource")) or "Content Security Policy" in m.text
                else None)
        page.on("response", lambda r: self.problems.append(f"{r.status} for {r.url}")
                if r.status >= 400 and r.request.resource_type != "document" else None)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("request", lambda r: None if r.url.startswith(allowed_prefixes) else self.problems.append(
            f"request off the page's origin: {r.url}"))
