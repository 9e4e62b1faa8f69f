"""A real loopback HTTP server that speaks the OpenAI chat-completions protocol, scripted per test.

litellm is pointed at it through `api_base` with a model string "openai/<name>", so the real
litellm and instructor code paths (HTTP, tool-call parsing, re-asks) run without any network.

A test scripts replies in order with `server.script(...)`; once the script is used up, the
`default` responder (if any) answers. `slots=1, delay_s=D` makes it a slow local server: one request
is processed at a time, for D seconds, while the others queue (llama.cpp's server with one slot);
a request the client gave up on keeps its slot until done, as on a server that does not cancel. Every request is recorded (`server.requests`) with its body
and arrival time, and the server tracks how many requests were in flight at once.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    """One scripted answer. `status` != 200 sends an OpenAI-style error body instead of a completion."""

    tool_args: dict[str, Any] | str | None = None  # a dict is JSON-encoded; a str is sent verbatim
    content: str | None = None  # plain assistant content (JSON mode, or a reply without tool calls)
    status: int = 200
    error: str = "scripted error"
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    usage: tuple[int, int] = (120, 40)  # prompt, completion tokens


Responder = Callable[[dict[str, Any]], Reply]


def tool_reply(**args: Any) -> Reply:
    return Reply(tool_args=dict(args))


def verdict(score: int | str, evidence_id: str, *, rationale: str = "The evidence supports this level.",
            confidence: float = 0.8, **cite: Any) -> Reply:
    """A well-formed verdict as a tool call citing one evidence id (extra citation fields via **cite)."""
    citation = {"evidence_id": evidence_id, **cite}
    return tool_reply(score=score, rationale=rationale, citations=[citation], confidence=confidence)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparseable": raw.decode("utf-8", "replace")}
        owner = self.server.owner
        reply = owner._next_reply(self.path, body)
        with owner._lock:
            owner._in_flight += 1
            owner.max_in_flight = max(owner.max_in_flight, owner._in_flight)
        try:
            with owner._slots:
                delay = reply.delay_s + owner.delay_s
                if delay and owner._stopping.wait(delay):
                    return
                self._send(reply, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout fired): that is the scripted behaviour
        finally:
            with owner._lock:
                owner._in_flight -= 1

    def _send(self, reply: Reply, body: dict[str, Any]) -> None:
        if reply.status != 200:
            payload = {"error": {"message": reply.error, "type": "scripted", "code": reply.status}}
        else:
            payload = _completion(reply, body)
        data = json.dumps(payload).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


def _completion(reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    finish = "stop"
    if reply.tool_args is not None:
        tools = body.get("tools") or [{"function": {"name": "Verdict"}}]
        name = tools[0]["function"]["name"]
        args = reply.tool_args if isinstance(reply.tool_args, str) else json.dumps(reply.tool_args)
        message["tool_calls"] = [{"id": "call_0", "type": "function", "function": {"name": name, "arguments": args}}]
        finish = "tool_calls"
    prompt, completion = reply.usage
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": body.get("model", "fake"),
        "system_fingerprint": "fp_fake_1",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeOpenAIServer


class FakeOpenAIServer:
    """Start with `start()` (or as a context manager); `base_url` is what litellm's api_base takes."""

    def __init__(self, default: Responder | None = None, *, slots: int | None = None, delay_s: float = 0.0) -> None:
        self.default = default
        self.delay_s = delay_s  # added to every reply's own delay
        self._slots: threading.Semaphore | contextlib.nullcontext = threading.Semaphore(slots) if slots else contextlib.nullcontext()
        self.requests: list[dict[str, Any]] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ---------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.max_in_flight = 0
        self.default = None

    def _next_reply(self, path: str, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append({"path": path, "body": body, "t": time.monotonic()})
            if self._queue:
                return self._queue.popleft()
        if self.default is not None:
            return self.default(body)
        return Reply(status=500, error="fake server: script exhausted and no default responder")

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- inspection helpers ------------------------------------------------------------------
    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]
