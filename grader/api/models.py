"""HTTP request and response bodies."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class EvaluationRequest(BaseModel):
    """A submission upload: the manifest (submission.toml as TOML text or as a table) and file texts."""

    model_config = ConfigDict(extra="forbid")

    manifest: str | dict[str, Any] = Field(description="submission.toml, as TOML text or as a JSON object")
    files: dict[str, str] = Field(description="relative path -> UTF-8 text of every file the manifest names")
    rubric: str | None = Field(default=None, description="rubric id (default: nki-kernel-review)")
    drafter: Literal["rules", "llm"] | None = None
    model: str | None = Field(default=None, description="litellm model string for the llm drafter")
    samples: int | None = Field(default=None, ge=1, le=16)
    no_cache: bool = False


class ErrorBody(BaseModel):
    """Every 4xx (and the rare 5xx) carries a one-line `detail`."""

    model_config = ConfigDict(extra="allow")

    detail: str


class RubricSummary(BaseModel):
    id: str
    version: str
    title: str
    criteria: list[str]


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    role: Literal["submitter", "reviewer", "lead", "admin"]


class KeyView(BaseModel):
    id: str
    name: str
    role: str
    created_by: str
    created_at: float
    revoked_at: float | None


class KeyCreated(KeyView):
    token: str = Field(description="shown once; only its hash is stored")


class AuditEntryView(BaseModel):
    seq: int
    at: str
    actor: str
    action: str
    subject: str
    data: dict[str, Any]
    prev_hash: str
    hash: str


class AuditPage(BaseModel):
    items: list[AuditEntryView]
    next_after: int | None = Field(description="pass as `after` for the next page; null at the end")


ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 401, 403, 404, 409, 413, 422, 429)
}
