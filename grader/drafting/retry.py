"""The one retry policy of the model path.

Three layers could retry a failed model call: litellm (num_retries), the OpenAI SDK under it
(max_retries) and our code. Only ours does, so attempts never multiply:
- transport errors (429, 5xx, timeouts, connection errors) are retried here with tenacity:
  exponential backoff with full jitter (honouring a provider's Retry-After, capped), a bounded
  number of attempts and a total deadline;
- replies that fail validation are re-asked by instructor with the validation error, `reasks` times;
- litellm and the SDK get `num_retries=0, max_retries=0` (`NO_PROVIDER_RETRIES`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.settings import Settings

import asyncio
from dataclasses import dataclass
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_after_delay, wait_random_exponential

NO_PROVIDER_RETRIES: dict[str, int] = {"num_retries": 0, "max_retries": 0}
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_TRANSIENT_NAMES = frozenset({
    "RateLimitError", "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
    "APIConnectionError", "Timeout", "APITimeoutError", "ConnectError", "ReadTimeout", "RemoteProtocolError",
})


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: rate limits, server errors, timeouts, dropped connections. Not 4xx request errors."""
    if isinstance(exc, (asyncio.TimeoutError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in TRANSIENT_STATUS
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def retry_after_s(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        value = float(headers.get("retry-after") or "")
    except ValueError:
        return None
    return value if value >= 0 else None


@dataclass(frozen=True)
class RetryPolicy:
    transport_attempts: int = 4  # HTTP attempts per model call, the first included
    backoff_s: float = 0.5  # scale of the exponential backoff (full jitter)
    backoff_max_s: float = 8.0  # cap of one wait, Retry-After included
    deadline_s: float = 120.0  # total time for one model call with its retries
    timeout_s: float = 60.0  # one HTTP attempt
    reasks: int = 2  # instructor re-asks after a reply fails validation

    @classmethod
    def from_settings(cls, settings: Settings) -> RetryPolicy:
        timeout = settings.timeout_s
        deadline = settings.retry_deadline_s
        return cls(
            transport_attempts=settings.retry_attempts,
            backoff_s=settings.retry_backoff_s,
            backoff_max_s=settings.retry_backoff_max_s,
            deadline_s=deadline if deadline is not None else max(cls.deadline_s, 2 * timeout),
            timeout_s=timeout,
            reasks=settings.max_reasks,
        )

    def _wait(self, state: RetryCallState) -> float:
        jitter = wait_random_exponential(multiplier=self.backoff_s, max=self.backoff_max_s)(state)
        exc = state.outcome.exception() if state.outcome else None
        hinted = retry_after_s(exc)
        return min(self.backoff_max_s, max(jitter, hinted)) if hinted is not None else jitter

    def transport(self) -> AsyncRetrying:
        """A fresh tenacity controller for one model call."""
        return AsyncRetrying(
            stop=stop_after_attempt(max(1, self.transport_attempts)) | stop_after_delay(self.deadline_s),
            wait=self._wait,
            retry=retry_if_exception(is_transient),
            reraise=True,
        )
