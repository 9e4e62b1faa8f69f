"""Client-side concurrency that adapts to the model server: slow start, back-off when it is overloaded.

A hosted API serves many requests at once; a local server (llama.cpp, Ollama, vLLM on one GPU) may
have one slot and queue the rest, so requests sent in parallel wait inside the server and time out
there. The limiter starts with one request in flight, grows by one per reply (doubling per round
trip) while replies come back quickly, and by one per window of replies after its first back-off.
It halves when a request times out or the server says it is busy (429, 503, 529), and when a reply
that shared the server with others took `queue_factor` times the fastest reply and at least
`queue_delay_s` more (the server queued it). Time spent waiting here for a slot is never part of a
request's timeout (see `grader.drafting.llm`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

QUEUE_FACTOR = 1.5
QUEUE_DELAY_S = 1.0


class AdaptiveLimiter:
    """At most `limit` requests in flight; `limit` moves between 1 and `ceiling` with the server's answers."""

    def __init__(self, ceiling: int, *, queue_factor: float = QUEUE_FACTOR, queue_delay_s: float = QUEUE_DELAY_S) -> None:
        self.ceiling = max(1, ceiling)
        self.queue_factor = queue_factor
        self.queue_delay_s = queue_delay_s
        self.window = 1.0
        self.threshold = float(self.ceiling)  # slow start below it, one step per window above it
        self.in_flight = 0
        self.fastest_s: float | None = None
        self.counts = {"replies": 0, "timeouts": 0, "busy": 0, "queued": 0, "max_limit": 1}
        self._changed = asyncio.Condition()

    @property
    def limit(self) -> int:
        return max(1, min(self.ceiling, int(self.window)))

    @asynccontextmanager
    async def slot(self, stop: Callable[[], bool] = lambda: False) -> AsyncIterator[int]:
        """Wait for a free slot (or until `stop()`; the caller then checks why). Yields the requests in
        flight including this one."""
        async with self._changed:
            await self._changed.wait_for(lambda: stop() or self.in_flight < self.limit)
            self.in_flight += 1
            sharing = self.in_flight
        try:
            yield sharing
        finally:
            async with self._changed:
                self.in_flight -= 1
                self._changed.notify_all()

    async def wake(self) -> None:
        """Let waiters re-check their `stop` condition (a draft was aborted)."""
        async with self._changed:
            self._changed.notify_all()

    def replied(self, latency_s: float, sharing: int) -> None:
        """A reply arrived after `latency_s`; `sharing` requests were in flight when it was sent."""
        self.counts["replies"] += 1
        fastest = self.fastest_s
        self.fastest_s = latency_s if fastest is None else min(fastest, latency_s)
        if (fastest is not None and sharing > 1 and latency_s > self.queue_factor * fastest
                and latency_s - fastest > self.queue_delay_s):
            self._back_off("queued")
            return
        self.window += 1.0 if self.window < self.threshold else 1.0 / self.window
        self.window = min(self.window, float(self.ceiling))
        self.counts["max_limit"] = max(self.counts["max_limit"], self.limit)

    def overloaded(self, why: str) -> None:
        """A request timed out ('timeouts') or the server said it is busy ('busy')."""
        self._back_off(why)

    def _back_off(self, why: str) -> None:
        self.counts[why] += 1
        self.threshold = max(1.0, self.window / 2)
        self.window = self.threshold

    def summary(self) -> dict[str, float]:
        return {"concurrency_limit": float(self.limit), "concurrency_ceiling": float(self.ceiling),
                **{f"concurrency_{k}": float(v) for k, v in self.counts.items()}}
