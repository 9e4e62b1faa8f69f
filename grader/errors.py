"""The grader's error hierarchy: every error renders as one line naming what is wrong and where."""

from __future__ import annotations


class GraderError(Exception):
    """Base error. `where` is a file (optionally file:line) or a manifest field path."""

    def __init__(self, message: str, *, where: str | None = None, field: str | None = None) -> None:
        self.message = message
        self.where = where
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        place = self.where or ""
        if self.field:
            place = f"{place}: {self.field}" if place else self.field
        text = f"{place}: {self.message}" if place else self.message
        return " ".join(text.split())


class SubmissionError(GraderError):
    """The submission folder or upload is malformed."""


class SubmissionTooLarge(SubmissionError):
    """A file or the whole upload exceeds the configured size limits."""


class ModelProviderError(GraderError):
    """The model provider rejected the configuration (key, permission, model, request) or cannot be reached."""


class RubricError(GraderError):
    """A rubric file is malformed or refers to unknown criteria or evidence kinds."""
