"""Reviewer scores for calibration items: `reviews.csv` with the header `reviewer,item,criterion,score`.

- `reviewer`: any non-empty name or id;
- `item`: an item id of the set (its folder path relative to the set, as in the report);
- `criterion`: a criterion id of the rubric;
- `score`: an integer on the rubric's scale, `not_applicable`, or `unscored` (the reviewer looked
  and could not decide; counted against the reviewer's unscored rate).

A reviewer who graded an item but left out a criterion is `unscored` on it too. Every problem is
one line naming the file and the row (`reviews.csv:7: unknown item 'x'`); nothing is half-loaded.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from grader.consistency.goldset import NOT_APPLICABLE, CalibrationError, GoldSet
from grader.rubric import Rubric

HEADER = ("reviewer", "item", "criterion", "score")
UNSCORED = "unscored"
ReviewScore = int | Literal["not_applicable", "unscored"]


class ReviewerScore(BaseModel):
    model_config = ConfigDict(frozen=True)

    reviewer: str
    item: str
    criterion: str
    score: ReviewScore
    row: int  # line in the file, for messages


def parse_reviews(text: str, gold: GoldSet, rubric: Rubric, where: str = "reviews.csv") -> list[ReviewerScore]:
    """Every row, validated against the set and the rubric; completes missing criteria as unscored."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows or tuple(c.strip().lower() for c in rows[0]) != HEADER:
        got = ",".join(rows[0]) if rows else "an empty file"
        raise CalibrationError(f"the first row must be the header {','.join(HEADER)}, got {got!r}", where=f"{where}:1")
    items = {i.id for i in gold.items}
    criteria = [c.id for c in rubric.criteria]
    lo, hi = rubric.scale_min, rubric.scale_max
    out: list[ReviewerScore] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue  # blank line
        place = f"{where}:{line}"
        if len(row) != len(HEADER):
            raise CalibrationError(f"expected {len(HEADER)} columns ({','.join(HEADER)}), got {len(row)}", where=place)
        reviewer, item, criterion, raw = (cell.strip() for cell in row)
        if not reviewer:
            raise CalibrationError("empty reviewer", where=place)
        if item not in items:
            raise CalibrationError(f"unknown item {item!r} (not in set {gold.name})", where=place)
        if criterion not in criteria:
            raise CalibrationError(f"unknown criterion {criterion!r}; rubric {rubric.id} has {', '.join(criteria)}", where=place)
        score: ReviewScore
        if raw in (NOT_APPLICABLE, UNSCORED):
            score = raw  # type: ignore[assignment]
        else:
            try:
                score = int(raw)
            except ValueError:
                raise CalibrationError(f"score {raw!r} is not an integer, {NOT_APPLICABLE!r} or {UNSCORED!r}", where=place) from None
            if not lo <= score <= hi:
                raise CalibrationError(f"score {score} is outside {lo}-{hi}", where=place)
        key = (reviewer, item, criterion)
        if key in seen:
            raise CalibrationError(f"duplicate score for {reviewer}/{item}/{criterion} (first on line {seen[key]})", where=place)
        seen[key] = line
        out.append(ReviewerScore(reviewer=reviewer, item=item, criterion=criterion, score=score, row=line))
    if not out:
        raise CalibrationError("no reviewer scores after the header", where=where)
    graded = {(r.reviewer, r.item) for r in out}
    for reviewer, item in sorted(graded):
        for cid in criteria:
            if (reviewer, item, cid) not in seen:
                out.append(ReviewerScore(reviewer=reviewer, item=item, criterion=cid, score=UNSCORED, row=0))
    return out


def load_reviews(path: str | Path, gold: GoldSet, rubric: Rubric) -> list[ReviewerScore]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CalibrationError(f"cannot read: {exc}", where=str(path)) from exc
    return parse_reviews(text, gold, rubric, where=p.name)
