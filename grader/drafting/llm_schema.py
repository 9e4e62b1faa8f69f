"""What a model must return per criterion, and validators that hold it to the evidence.

The validators read instructor's validation context (`VerdictContext`): a cited id must exist in the
bundle, a cited line range must exist in the cited file, quoted text must occur at the cited lines,
and the score must be a level the criterion offers. A failure raises a ValueError whose message
tells the model what to fix; instructor sends it back as a bounded re-ask.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, field_validator, model_validator

from evidence.model import EvidenceBundle
from grader.prompting import INJECTION_KIND, neutralize
from grader.rubric import Criterion

NOT_APPLICABLE = "not_applicable"
QUOTE_SLACK_LINES = 1  # a quote may start or end one line outside the cited range (off-by-one line numbers)


@dataclass(frozen=True)
class VerdictContext:
    """Everything the validators need; passed to instructor as `context={"verdict": ctx}`."""

    criterion_id: str
    scores: tuple[int, ...]
    evidence_ids: frozenset[str]  # every id in the bundle
    citable: frozenset[str]  # ids this criterion may cite: its evidence kinds, plus injection findings
    locations: dict[str, tuple[str, int, int]]  # evidence id -> (file, first, last line)
    files: dict[str, list[str]] = field(default_factory=dict)  # path -> lines

    @classmethod
    def build(cls, criterion: Criterion, bundle: EvidenceBundle, files: dict[str, str]) -> VerdictContext:
        locs = {}
        for item in (*bundle.items, *bundle.failures):
            if item.location is not None:
                locs[item.id] = (item.location.file, item.location.start_line, item.location.end_line)
        citable = {i.id for i in bundle.items if criterion.cites(i.kind) or i.kind == INJECTION_KIND}
        if criterion.cites("analyzer_failure"):
            citable |= {f.id for f in bundle.failures}
        return cls(
            criterion_id=criterion.id, scores=criterion.scores, evidence_ids=frozenset(bundle.ids()),
            citable=frozenset(citable),
            locations=locs, files={p: t.splitlines() for p, t in files.items()},
        )


def _squash(text: str) -> str:
    """Compare quotes modulo whitespace and the prompt's neutralisation of fence look-alikes."""
    return " ".join(neutralize(text).split())


def _ctx(info: ValidationInfo) -> VerdictContext | None:
    context = info.context or {}
    ctx = context.get("verdict") if isinstance(context, dict) else None
    return ctx if isinstance(ctx, VerdictContext) else None


class CitedEvidence(BaseModel):
    model_config = ConfigDict(extra="ignore")

    evidence_id: str = Field(description="An evidence id exactly as shown in square brackets in the prompt")
    file: str | None = Field(default=None, description="Submission file the quote or line range is in")
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)
    quote: str | None = Field(default=None, description="Short text copied exactly from the cited lines")

    @model_validator(mode="after")
    def _resolves(self, info: ValidationInfo) -> CitedEvidence:
        ctx = _ctx(info)
        if ctx is None:
            return self
        if self.evidence_id not in ctx.evidence_ids:
            known = sorted(ctx.citable)
            hint = ", ".join(known[:15]) + (" ..." if len(known) > 15 else "")
            raise ValueError(f"evidence id {self.evidence_id!r} does not exist; cite only ids from the prompt ({hint})")
        if self.evidence_id not in ctx.citable:
            raise ValueError(f"evidence {self.evidence_id!r} is not evidence for {ctx.criterion_id}; cite only ids listed in the prompt")
        file, first, last = self._span(ctx)
        if file is None:
            if self.quote:
                raise ValueError(f"the quote for {self.evidence_id!r} needs a file and lines: that evidence has no location")
            return self
        lines = ctx.files.get(file)
        if lines is None:
            raise ValueError(f"file {file!r} is not part of the submission; files: {sorted(ctx.files)}")
        if first is None or last is None:
            return self
        if last < first or last > len(lines):
            raise ValueError(f"lines {first}-{last} do not exist in {file} ({len(lines)} lines)")
        if self.quote and self.quote.strip():
            lo, hi = max(1, first - QUOTE_SLACK_LINES), min(len(lines), last + QUOTE_SLACK_LINES)
            window = _squash("\n".join(lines[lo - 1:hi]))
            if _squash(self.quote) not in window:
                raise ValueError(
                    f"the quote {self.quote[:80]!r} does not occur in {file} lines {first}-{last}; "
                    "copy the text exactly from those numbered lines, or omit the quote"
                )
        return self

    def _span(self, ctx: VerdictContext) -> tuple[str | None, int | None, int | None]:
        """The file and lines this citation points at: its own, else the evidence item's location."""
        loc = ctx.locations.get(self.evidence_id)
        file = self.file or (loc[0] if loc else None)
        first = self.start_line
        last = self.end_line if self.end_line is not None else self.start_line
        if first is None and loc and file == loc[0]:
            first, last = loc[1], loc[2]
        return file, first, last


class Verdict(BaseModel):
    """Base response model; `verdict_model(criterion)` narrows `score` to the criterion's levels."""

    model_config = ConfigDict(extra="ignore")

    score: Union[int, Literal["not_applicable"]]  # noqa: UP007 - narrowed per criterion
    rationale: str = Field(min_length=1, description="Why this level: the deciding evidence ids and what is missing for the next level")
    # Required (no default) so grammar-constrained providers always emit it; may be empty only for not_applicable.
    citations: list[CitedEvidence] = Field(description="Evidence the score stands on; at least one for a score")
    confidence: float = Field(ge=0, le=1)

    @field_validator("rationale")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the rationale is empty")
        return value.strip()

    @model_validator(mode="after")
    def _scored_and_cited(self, info: ValidationInfo) -> Verdict:
        ctx = _ctx(info)
        if ctx is None:
            return self
        if self.score != NOT_APPLICABLE and self.score not in ctx.scores:
            raise ValueError(f"score {self.score!r} is not a level of {ctx.criterion_id}; use one of {list(ctx.scores)} or 'not_applicable'")
        if self.score != NOT_APPLICABLE and not self.citations:
            raise ValueError("a score needs at least one citation of an evidence id from the prompt")
        return self

    @property
    def is_scored(self) -> bool:
        return self.score != NOT_APPLICABLE


@cache
def verdict_model(criterion_id: str, scores: tuple[int, ...]) -> type[Verdict]:
    """A response model per criterion whose schema lists exactly the levels the criterion offers."""
    allowed: Any = Literal[(*scores, NOT_APPLICABLE)]  # type: ignore[valid-type]
    name = "Verdict_" + re.sub(r"\W", "_", criterion_id)
    return create_model(
        name, __base__=Verdict,
        score=(allowed, Field(description=f"One of the levels {list(scores)} of criterion {criterion_id}, or 'not_applicable'")),
    )

