"""The one retry policy of the model path.

Three layers could retry a failed model call: litellm (num_retries), the OpenAI SDK under it
(max_retries) and our code. Only ours does, so attempts never multiply:
- transport errors (429, 5xx, timeouts, connection errors) are retried here with tenacity:
  exponential backoff with full jitter (honouring a provider's Retry-After, capped), a bounded
  number of attempts and a total deadline (time waiting for a client-side slot is not counted);
- errors that say the configuration is wrong (authentication, permission, not found, bad request)
  are never retried: `classify` tells them apart by litellm's exception classes or the HTTP status;
- replies that fail validation are re-asked by instructor with the validation error, `reasks` times;
- litellm and the SDK get `num_retries=0, max_retries=0` (`NO_PROVIDER_RETRIES`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.settings import Settings

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, stop_any, wait_random_exponential

from grader.drafting._litellm import load_litellm

NO_PROVIDER_RETRIES: dict[str, int] = {"num_retries": 0, "max_retries": 0}
TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
OVERLOAD_STATUS = frozenset({408, 429, 503, 529})  # the server is too slow or too busy: fewer requests in flight
FATAL_STATUS = frozenset({400, 401, 403, 404})  # the configuration is wrong (key, permission, model, endpoint)


class ErrorKind(StrEnum):
    fatal = "fatal"  # the provider rejects the configuration: no later call can succeed, stop the draft
    overload = "overload"  # timed out or busy: retry, with less concurrency
    transient = "transient"  # dropped connection, server error: retry
    final = "final"  # this request cannot succeed (too long, refused content); other requests may


def classify(exc: BaseException) -> ErrorKind:
    """What a failed model call means, from litellm's exception classes (or the HTTP status), never names."""
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return ErrorKind.overload
    litellm = load_litellm()
    if isinstance(exc, (litellm.ContextWindowExceededError, litellm.ContentPolicyViolationError)):
        return ErrorKind.final
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError, litellm.NotFoundError,
                        litellm.BadRequestError)):
        return ErrorKind.fatal
    if isinstance(exc, (litellm.Timeout, litellm.RateLimitError, litellm.ServiceUnavailableError)):
        return ErrorKind.overload
    if isinstance(exc, (litellm.APIConnectionError, litellm.InternalServerError, litellm.BadGatewayError, ConnectionError)):
        return ErrorKind.transient
    import httpx  # a transport error that reached us unwrapped

    if isinstance(exc, httpx.TimeoutException):
        return ErrorKind.overload
    if isinstance(exc, httpx.TransportError):
        return ErrorKind.transient
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status in OVERLOAD_STATUS:
            return ErrorKind.overload
        if status in TRANSIENT_STATUS:
            return ErrorKind.transient
        if status in FATAL_STATUS:
            return ErrorKind.fatal
    return ErrorKind.final


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: timeouts, rate limits, server errors, dropped connections. Never 4xx request errors."""
    return classify(exc) in (ErrorKind.overload, ErrorKind.transient)


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

    def transport(self, active_s: Callable[[], float]) -> AsyncRetrying:
        """A fresh tenacity controller for one model call; `active_s()` is the call's time so far without
        the time it waited for a client-side slot, which the deadline does not count."""
        return AsyncRetrying(
            stop=stop_any(stop_after_attempt(max(1, self.transport_attempts)), lambda _: active_s() >= self.deadline_s),
            wait=self._wait,
            retry=retry_if_exception(is_transient),
            reraise=True,
        )
