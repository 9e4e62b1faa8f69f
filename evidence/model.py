"""Evidence data model: what every collector produces and every drafter cites.

Evidence is deterministic: the same submission gives the same items with the same ids, in the
same order, so drafts that cite them are reproducible. Timings are kept apart from the content
hash for that reason.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import Enum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, computed_field

EVIDENCE_SCHEMA_VERSION = 2  # 2: items no longer carry rubric criteria

# Ids are cited verbatim by drafters (and models), so they stay short, readable and stable.
EvidenceId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:/@\-\[\]]+$", max_length=200)]


class Severity(str, Enum):
    """How much a finding matters to a reviewer, in increasing order."""

    info = "info"
    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"

    @property
    def rank(self) -> int:
        return _SEVERITY_ORDER[self]


_SEVERITY_ORDER = {s: i for i, s in enumerate(Severity)}


class Location(BaseModel):
    """A line span in one submission file (1-based, inclusive)."""

    model_config = ConfigDict(frozen=True)

    file: str
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)

    def __str__(self) -> str:
        if self.end_line != self.start_line:
            return f"{self.file}:{self.start_line}-{self.end_line}"
        return f"{self.file}:{self.start_line}"


class EvidenceItem(BaseModel):
    """One fact or finding with a stable id, a source location where it has one, and numbers."""

    model_config = ConfigDict(frozen=True)

    id: EvidenceId
    kind: str  # from the catalogue of kinds declared by collectors (evidence.catalog)
    analyzer: str  # "name@version"
    severity: Severity = Severity.info
    title: str
    detail: str = ""
    location: Location | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    labels: dict[str, str] = Field(default_factory=dict)


class AnalyzerFailure(BaseModel):
    """A collector that crashed or timed out. It is evidence too: the bundle is never lost."""

    model_config = ConfigDict(frozen=True)

    id: EvidenceId
    analyzer: str
    error_type: str
    message: str
    location: Location | None = None


def _canonical(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def content_hash(obj: object) -> str:
    """sha256 of a canonical JSON rendering, as 'sha256:<hex>'."""
    return "sha256:" + hashlib.sha256(_canonical(obj)).hexdigest()


class EvidenceBundle(BaseModel):
    """All evidence gathered for one submission. Frozen and content-addressed."""

    model_config = ConfigDict(frozen=True)

    version: int = EVIDENCE_SCHEMA_VERSION
    submission_hash: str
    items: tuple[EvidenceItem, ...] = ()
    failures: tuple[AnalyzerFailure, ...] = ()
    analyzers: dict[str, str] = Field(default_factory=dict)  # name -> version
    # Wall-clock seconds per collector: informative only, excluded from the hash.
    timings: dict[str, float] = Field(default_factory=dict, exclude=False)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def bundle_hash(self) -> str:
        return content_hash(
            {
                "version": self.version,
                "submission_hash": self.submission_hash,
                "items": [i.model_dump(mode="json") for i in self.items],
                "failures": [f.model_dump(mode="json") for f in self.failures],
                "analyzers": self.analyzers,
            }
        )

    def get(self, evidence_id: str) -> EvidenceItem | AnalyzerFailure | None:
        for item in self.items:
            if item.id == evidence_id:
                return item
        for failure in self.failures:
            if failure.id == evidence_id:
                return failure
        return None

    def ids(self) -> set[str]:
        return {i.id for i in self.items} | {f.id for f in self.failures}

    def of_kind(self, *patterns: str) -> list[EvidenceItem]:
        """Items whose kind matches any pattern (exact, or a prefix glob ending in '*')."""
        return [i for i in self.items if any(kind_matches(p, i.kind) for p in patterns)]


def kind_matches(pattern: str, kind: str) -> bool:
    if pattern.endswith("*"):
        return kind.startswith(pattern[:-1])
    return kind == pattern


_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/@\-\[\]]+")


def make_id(*parts: object) -> str:
    """Join parts into a citation-safe evidence id, e.g. make_id('static.hoistable-load', 'kernel.py', 23)."""
    text = ":".join(str(p) for p in parts if p is not None and p != "")
    return _ID_UNSAFE.sub("_", text)[:200]


def sort_items(items: list[EvidenceItem]) -> tuple[EvidenceItem, ...]:
    """Deterministic order: by file and line, then kind, then id; items without a location last."""

    def key(i: EvidenceItem) -> tuple:
        loc = i.location
        return (loc is None, loc.file if loc else "", loc.start_line if loc else 0, i.kind, i.id)

    return tuple(sorted(items, key=key))


def dedupe_ids(items: list[EvidenceItem]) -> list[EvidenceItem]:
    """Make ids unique by suffixing ':2', ':3'... in input order (collectors should avoid needing it)."""
    seen: dict[str, int] = {}
    out = []
    for item in items:
        n = seen.get(item.id, 0) + 1
        seen[item.id] = n
        out.append(item if n == 1 else item.model_copy(update={"id": make_id(item.id, n)}))
    return out
