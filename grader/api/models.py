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
    detail: str


class RubricSummary(BaseModel):
    id: str
    version: str
    title: str
    criteria: list[str]
