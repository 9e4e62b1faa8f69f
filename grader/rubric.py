"""Rubrics: criteria with described 1-5 levels, applicability, citable evidence kinds and evidence rules.

Rubrics are TOML files: the shipped ones (`rubrics/` of the repository, package data in a wheel) and
the user's (`GRADER_RUBRIC_PATH`), see `grader.resources`. Loading validates them against the
evidence catalogue, so a rubric can never cite a kind no collector produces, and records a content
hash for every draft. Criterion ids are the rubric's own: evidence never names them.
"""

from __future__ import annotations

import hashlib
import tomllib
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evidence.catalog import known_kinds
from evidence.model import Severity, kind_matches
from evidence.validation import error_message, field_path
from grader.errors import RubricError
from grader.resources import describe

DEFAULT_RUBRIC = "nki-kernel-review"

Applicability = Literal["always", "has_cuda", "has_claims", "has_reference"]
Comparison = Literal["==", "!=", "<", "<=", ">", ">="]


class EvidenceMatch(BaseModel):
    """Which evidence items a rule looks at: kind (glob), and optionally severity, a metric test, a label."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    min_severity: Severity | None = None
    metric: str | None = None
    ratio_to: str | None = None  # compare metric / ratio_to (e.g. redundant bytes / bytes read)
    op: Comparison = ">"
    value: float | None = None
    label: str | None = None
    equals: str | list[str] | None = None  # a value ending in '*' matches a prefix, e.g. "err_*"
    # Further label tests, all of which must hold: label -> value(s); a value starting with '!' excludes
    # it (`trace = "!contradicted"` also holds when the item has no such label).
    labels: dict[str, str | list[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _pairs(self) -> EvidenceMatch:
        if (self.metric is None) != (self.value is None):
            raise ValueError("'metric' and 'value' go together")
        if self.ratio_to is not None and self.metric is None:
            raise ValueError("'ratio_to' needs 'metric'")
        if (self.label is None) != (self.equals is None):
            raise ValueError("'label' and 'equals' go together")
        return self


class EvidenceRule(BaseModel):
    """A declarative rule: when matching evidence exists, cap, floor or lower the criterion's score,
    or (`support = true`) name it as positive evidence for a high score, or (`unobserved = true`) say that
    the evidence that would have shown what the criterion is about is missing (the simulation stopped
    before it got there): the score, read from the source alone, does not move, but the draft says so,
    cites why, flags it for the reviewer and is drafted in the `unobserved` state (its own confidence)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    description: str
    when: EvidenceMatch
    cap: int | None = None
    floor: int | None = None
    penalty: int | None = Field(default=None, ge=1)
    per_item: bool = False  # penalty once per matching item (bounded by max_penalty) instead of once
    max_penalty: int | None = Field(default=None, ge=1)
    support: bool = False  # positive evidence: cited by a rationale that scores 4 or 5
    unobserved: bool = False  # the criterion's subject was not observed: judged on the source alone, flagged

    @model_validator(mode="after")
    def _one_effect(self) -> EvidenceRule:
        if sum(x is not None for x in (self.cap, self.floor, self.penalty)) + self.support + self.unobserved != 1:
            raise ValueError(f"rule {self.id!r} needs exactly one of cap, floor, penalty, support, unobserved")
        return self

    @property
    def effect(self) -> str:
        """What the rule does to the score, in words: the one wording the CLI, prompts, drafter and guards use."""
        if self.cap is not None:
            return f"score at most {self.cap}"
        if self.floor is not None:
            return f"score at least {self.floor}"
        if self.support:
            return "positive evidence for a high score (no score change)"
        if self.unobserved:
            return "not observed: the score rests on the source alone and is flagged (no score change)"
        per = " per matching item" + (f", at most {self.max_penalty} in all" if self.max_penalty else "") if self.per_item else ""
        return f"score lowered by {self.penalty}{per}"


class Gates(BaseModel):
    """Release gates of a calibration run (judging practice §6); a criterion may override any of them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    qwk_min: float = 0.70
    smd_max: float = 0.15  # absolute standardised mean difference
    exact_min: float = 0.50
    adjacent_min: float = 0.95
    unscored_max: float = 0.10
    min_items: int = Field(default=5, ge=1)  # fewer scored gold items cannot calibrate a criterion
    degradation_min: float = -0.10  # model-gold minus human-gold QWK, when reviewers are measured


class Level(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    score: int
    descriptor: str


class Criterion(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    title: str
    description: str
    applies_when: Applicability = "always"
    evidence_kinds: tuple[str, ...]
    basis: tuple[str, ...] = ()  # kinds without which the criterion is unscored ("insufficient evidence")
    start: int = 5  # the rules drafter's score when the basis exists and no rule objects
    # Penalties (inefficiencies, gaps) alone never take the score below this; the levels under it
    # describe defects, which only a cap rule (evidence of the defect) may reach.
    penalty_floor: int = 2
    levels: tuple[Level, ...]
    rules: tuple[EvidenceRule, ...] = ()
    gates: dict[str, float] = Field(default_factory=dict)  # overrides of the rubric's gates

    @field_validator("gates")
    @classmethod
    def _known_gates(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(Gates.model_fields))
        if unknown:
            raise ValueError(f"unknown gates {unknown}; known: {sorted(Gates.model_fields)}")
        return value

    @field_validator("levels", mode="before")
    @classmethod
    def _levels_from_table(cls, value: object) -> object:
        if isinstance(value, dict):  # TOML: [criteria.levels] "1" = "..."
            try:
                return [{"score": int(k), "descriptor": v} for k, v in value.items()]
            except ValueError as exc:
                raise ValueError("level keys must be integers") from exc
        return value

    @property
    def scores(self) -> tuple[int, ...]:
        return tuple(sorted(level.score for level in self.levels))

    def cites(self, kind: str) -> bool:
        return any(kind_matches(p, kind) for p in self.evidence_kinds)


class Rubric(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    version: str
    title: str
    description: str = ""
    scale_min: int = 1
    scale_max: int = 5
    criteria: tuple[Criterion, ...]
    gates: Gates = Gates()
    content_hash: str = ""

    def gates_for(self, criterion_id: str, overrides: dict[str, float] | None = None) -> Gates:
        """The rubric's gates, then the criterion's overrides, then the caller's (e.g. `--gate`)."""
        return Gates.model_validate({**self.gates.model_dump(), **self.criterion(criterion_id).gates, **(overrides or {})})

    def criterion(self, criterion_id: str) -> Criterion:
        for c in self.criteria:
            if c.id == criterion_id:
                return c
        raise KeyError(criterion_id)


def _check_kinds(rubric: Rubric, where: str) -> None:
    kinds = known_kinds()

    def known(pattern: str) -> bool:
        return any(kind_matches(pattern, k) for k in kinds)

    for crit in rubric.criteria:
        for pattern in (*crit.evidence_kinds, *crit.basis, *(r.when.kind for r in crit.rules)):
            if not known(pattern):
                raise RubricError(f"unknown evidence kind {pattern!r}", where=where, field=f"criteria.{crit.id}")
        looked_at = [(f"rule {r.id!r} looks at", r.when.kind, "rules") for r in crit.rules]
        looked_at += [("basis", b, "basis") for b in crit.basis]
        for what, pattern, field in looked_at:
            if not all(crit.cites(k) for k in kinds if kind_matches(pattern, k)):
                raise RubricError(f"{what} {pattern!r}, which the criterion may not cite",
                                  where=where, field=f"criteria.{crit.id}.{field}")


def _check_structure(rubric: Rubric, where: str) -> None:
    seen: set[str] = set()
    expected = set(range(rubric.scale_min, rubric.scale_max + 1))
    for crit in rubric.criteria:
        field = f"criteria.{crit.id}"
        if crit.id in seen:
            raise RubricError("duplicate criterion id", where=where, field=field)
        seen.add(crit.id)
        if set(crit.scores) != expected or len(crit.levels) != len(expected):
            raise RubricError(
                f"levels must describe every score {rubric.scale_min}..{rubric.scale_max} once, got {list(crit.scores)}",
                where=where, field=field,
            )
        bounded = [crit.start, crit.penalty_floor] + [b for r in crit.rules for b in (r.cap, r.floor) if b is not None]
        if any(not rubric.scale_min <= b <= rubric.scale_max for b in bounded):
            raise RubricError("start, caps and floors must lie on the scale", where=where, field=field)


def parse_rubric(text: str, *, where: str = "<rubric>") -> Rubric:
    """Parse and validate rubric TOML text; raise RubricError with a one-line message."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RubricError(f"invalid TOML: {exc}", where=where) from exc
    head = data.pop("rubric", None)
    if not isinstance(head, dict):
        raise RubricError("missing [rubric] table", where=where)
    scale = head.pop("scale", {"min": 1, "max": 5})
    payload = {**head, "scale_min": scale.get("min", 1), "scale_max": scale.get("max", 5),
               "criteria": data.pop("criteria", [])}
    if data:
        raise RubricError(f"unknown top-level keys {sorted(data)}", where=where)
    try:
        rubric = Rubric.model_validate(payload)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise RubricError(error_message(err), where=where, field=_name_criteria(err["loc"], payload)) from exc
    _check_structure(rubric, where)
    _check_kinds(rubric, where)
    digest = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    return rubric.model_copy(update={"content_hash": digest})


def _name_criteria(loc: tuple, payload: dict) -> str:
    """Turn ('criteria', 3, 'levels') into 'criteria.tiling.levels' so errors name the criterion."""
    parts = list(loc)
    if len(parts) > 1 and parts[0] == "criteria" and isinstance(parts[1], int):
        crits = payload.get("criteria", [])
        idx = parts[1]
        if idx < len(crits) and isinstance(crits[idx], dict) and "id" in crits[idx]:
            parts[1] = str(crits[idx]["id"])
    return field_path(parts)


def load_rubric_file(path: Path) -> Rubric:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RubricError(f"cannot read rubric: {exc.strerror}", where=str(path)) from exc
    return parse_rubric(text, where=path.name)


def rubric_dirs(dirs: tuple[Path, ...] | None = None) -> tuple[Path, ...]:
    """`dirs` as given, or the configured search path (GRADER_RUBRIC_PATH, then the shipped rubrics)."""
    if dirs is not None:
        return dirs
    from grader.settings import Settings  # lazy: settings are read when asked for, never at import

    return Settings().rubric_dirs()


def available_rubrics(dirs: tuple[Path, ...] | None = None) -> dict[str, Path]:
    """Rubric id (file stem) -> file, over the search path; the first directory that has an id wins."""
    found: dict[str, Path] = {}
    for directory in rubric_dirs(dirs):
        for path in sorted(directory.glob("*.toml")):
            found.setdefault(path.stem, path)
    return found


def unknown_rubric(rubric_id: str, dirs: tuple[Path, ...] | None = None) -> RubricError:
    dirs = rubric_dirs(dirs)
    return RubricError(f"unknown rubric {rubric_id!r}; available: {sorted(available_rubrics(dirs))} "
                       f"(searched {describe(dirs)})")


def load_rubric(rubric_id: str = DEFAULT_RUBRIC, dirs: tuple[Path, ...] | None = None) -> Rubric:
    """A rubric by id (file stem on the search path) or by path to a TOML file."""
    path = Path(rubric_id)
    if path.suffix == ".toml" and path.exists():
        return _load_cached(path.resolve())
    found = available_rubrics(dirs).get(rubric_id)
    if found is None:
        raise unknown_rubric(rubric_id, dirs)
    return _load_cached(found.resolve())


@cache
def _load_cached(path: Path) -> Rubric:
    return load_rubric_file(path)
