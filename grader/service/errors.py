"""Service errors: each maps to one HTTP status and renders as one line."""

from __future__ import annotations

from grader.errors import GraderError


class ServiceError(GraderError):
    status = 400


class NotFound(ServiceError):
    status = 404


class Forbidden(ServiceError):
    status = 403


class Conflict(ServiceError):
    status = 409


class Invalid(ServiceError):
    status = 422


class QueueFull(ServiceError):
    status = 429

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
