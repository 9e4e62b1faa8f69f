"""Gold-labelled sets: a folder of submission folders, each with `gold.toml` (DESIGN §4).

    [criteria.<id>]
    score = 1..5 | "not_applicable"
    rationale = "..."
    [meta]                      # what was planted, by whom, how the gold was decided

Loading validates everything before any grading starts, so bad input is one line naming the file
(and line, where TOML has one) and nothing is graded from a half-valid set. A criterion the gold
file leaves out is `no_gold` for that item and counted in the report, never guessed.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from grader.errors import GraderError
from grader.rubric import Rubric
from grader.submission import MANIFEST, Limits, load_submission

GOLD = "gold.toml"
NOT_APPLICABLE = "not_applicable"
GoldScore = int | Literal["not_applicable"]


class CalibrationError(GraderError):
    """A calibration or audit set, a gold file or a reviews file is malformed."""


class GoldLabel(BaseModel):
    model_config = ConfigDict(frozen=True)

    score: GoldScore
    rationale: str = ""

    @property
    def applicable(self) -> bool:
        return self.score != NOT_APPLICABLE


class GoldItem(BaseModel):
    """One calibration item: its submission folder (relative to the set) and gold per criterion."""

    model_config = ConfigDict(frozen=True)

    id: str  # folder path relative to the set, e.g. "softmax-bf16-stats"
    path: str  # absolute folder path
    labels: dict[str, GoldLabel]
    meta: dict[str, Any] = {}


class GoldSet(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    path: str
    items: tuple[GoldItem, ...]
    hash: str  # over every file of every item: a changed set is a different set

    def item(self, item_id: str) -> GoldItem:
        for it in self.items:
            if it.id == item_id:
                return it
        raise KeyError(item_id)


def _line_of(text: str, criterion_id: str) -> int | None:
    """The line of `[criteria.<id>]` (or a `<id> = {` inline table) in the gold file, for error messages."""
    pattern = re.compile(rf"^[ \t]*(\[\s*criteria\s*\.\s*\"?{re.escape(criterion_id)}\"?\s*\]|{re.escape(criterion_id)}\s*=)", re.M)
    m = pattern.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else None


def parse_gold(text: str, rubric: Rubric, where: str) -> tuple[dict[str, GoldLabel], dict[str, Any]]:
    """Gold labels and meta from gold.toml text; CalibrationError naming file:line on any problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CalibrationError(f"invalid TOML: {exc}", where=where) from exc
    criteria = data.pop("criteria", None)
    meta = data.pop("meta", {})
    if data:
        raise CalibrationError(f"unknown top-level keys {sorted(data)}; expected [criteria.<id>] and [meta]", where=where)
    if not isinstance(criteria, dict) or not criteria:
        raise CalibrationError("no [criteria.<id>] tables", where=where)
    known = [c.id for c in rubric.criteria]
    labels: dict[str, GoldLabel] = {}
    lo, hi = rubric.scale_min, rubric.scale_max
    for cid, body in criteria.items():
        line = _line_of(text, cid)
        place = f"{where}:{line}" if line else where
        if cid not in known:
            raise CalibrationError(f"unknown criterion {cid!r}; rubric {rubric.id} has {', '.join(known)}", where=place)
        if not isinstance(body, dict) or "score" not in body:
            raise CalibrationError(f"criteria.{cid} needs score = {lo}..{hi} or \"{NOT_APPLICABLE}\"", where=place)
        score = body["score"]
        extra = sorted(set(body) - {"score", "rationale"})
        if extra:
            raise CalibrationError(f"criteria.{cid}: unknown keys {extra}", where=place)
        if isinstance(score, bool) or not (score == NOT_APPLICABLE or (isinstance(score, int) and lo <= score <= hi)):
            raise CalibrationError(f"criteria.{cid}.score = {score!r} is outside {lo}-{hi} (or \"{NOT_APPLICABLE}\")", where=place)
        rationale = body.get("rationale", "")
        if not isinstance(rationale, str):
            raise CalibrationError(f"criteria.{cid}.rationale must be a string", where=place)
        labels[cid] = GoldLabel(score=score, rationale=rationale)
    if not isinstance(meta, dict):
        raise CalibrationError("[meta] must be a table", where=where)
    return labels, meta


def _item_dirs(root: Path) -> list[Path]:
    """Folders holding a submission.toml or a gold.toml (either alone is an error later), sorted."""
    found = {p.parent for name in (MANIFEST, GOLD) for p in root.rglob(name)}
    return sorted(found)


def load_gold_set(path: str | Path, rubric: Rubric, *, limits: Limits | None = None) -> GoldSet:
    """Load and validate every item of a set (submission and gold). Raises CalibrationError."""
    root = Path(path)
    if not root.is_dir():
        raise CalibrationError("not a folder", where=str(path))
    dirs = _item_dirs(root)
    if not dirs:
        raise CalibrationError(f"no items: no sub-folder holds a {MANIFEST} with a {GOLD}", where=str(path))
    digest = hashlib.sha256()
    items = []
    for d in dirs:
        rel = d.relative_to(root).as_posix() or "."
        if not (d / MANIFEST).is_file():
            raise CalibrationError(f"{GOLD} without a {MANIFEST}", where=f"{path}/{rel}")
        gold_path = d / GOLD
        if not gold_path.is_file():
            raise CalibrationError(f"item has no {GOLD}", where=f"{path}/{rel}")
        try:
            text = gold_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CalibrationError(f"cannot read: {exc}", where=str(gold_path)) from exc
        labels, meta = parse_gold(text, rubric, where=f"{rel}/{GOLD}")
        try:  # bad submissions fail here, before any grading, named by item
            sub = load_submission(d, limits or Limits())
        except GraderError as exc:
            raise CalibrationError(exc.one_line(), where=rel) from exc
        digest.update(f"{rel}\0{sub.content_hash}\0{hashlib.sha256(text.encode()).hexdigest()}\0".encode())
        items.append(GoldItem(id=rel, path=str(d.resolve()), labels=labels, meta=meta))
    return GoldSet(name=root.resolve().name, path=str(root.resolve()), items=tuple(items),
                   hash="sha256:" + digest.hexdigest())
