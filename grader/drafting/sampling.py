"""k samples per criterion reduced to one draft: median level, dispersion, instability flags.

Scores are ordinal, so the reducer is the (lower) median, never a mean. The reported rationale and
citations are those of the first sample at the median, so they argue for the score reported.
Samples that failed are kept as `None` in `samples`; a criterion is unscored only when no sample
produced a valid verdict.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from grader.draft import Citation, CriterionDraft, Flag
from grader.drafting.llm_schema import Verdict

UNSTABLE_SPREAD = 1  # samples further apart than this many levels go to a reviewer


@dataclass
class SampleResult:
    index: int
    verdict: Verdict | None = None
    reason: str | None = None  # why this sample has no verdict
    calls: list[dict[str, Any]] = field(default_factory=list)
    cached: bool = False


def reduce_samples(criterion_id: str, results: list[SampleResult], citations_of: Any) -> CriterionDraft:
    """One CriterionDraft from k samples. `citations_of(verdict)` turns a verdict's citations into Citations."""
    results = sorted(results, key=lambda r: r.index)
    ok = [r for r in results if r.verdict is not None]
    failed = [r for r in results if r.verdict is None]
    per_sample = tuple(r.verdict.score if r.verdict is not None and r.verdict.is_scored else None for r in results)
    if not ok:
        reason = failed[-1].reason or "no valid reply"
        flags = tuple(Flag(code="model_failure", message=f"sample {r.index}: {r.reason}") for r in failed)
        return CriterionDraft(criterion_id=criterion_id, status="unscored", reason=f"unscored: {reason}",
                              rationale=f"No sample produced a valid verdict; last error: {reason}",
                              flags=flags, samples=per_sample)
    flags: list[Flag] = [Flag(code="partial_samples", message=f"sample {r.index} failed: {r.reason}") for r in failed]
    scored = [r for r in ok if r.verdict is not None and r.verdict.is_scored]
    abstained = [r for r in ok if r not in scored]
    if scored and abstained:
        flags.append(Flag(code="unstable_samples",
                          message=f"{len(abstained)} of {len(ok)} valid samples said not_applicable, {len(scored)} scored"))
    if len(abstained) > len(scored):
        rep = abstained[0].verdict
        assert rep is not None
        flags.append(Flag(code="model_not_applicable", message="the model judged this criterion not applicable; confirm"))
        return CriterionDraft(criterion_id=criterion_id, status="not_applicable", reason=rep.rationale,
                              rationale=rep.rationale, citations=citations_of(rep), confidence=rep.confidence,
                              flags=tuple(flags), samples=per_sample)
    scores = [int(r.verdict.score) for r in scored if r.verdict is not None]
    median = statistics.median_low(scores)
    spread = max(scores) - min(scores)
    if spread > UNSTABLE_SPREAD:
        flags.append(Flag(code="unstable_samples",
                          message=f"sample scores {scores} differ by {spread} levels (median {median})"))
    at_median = [r.verdict for r in scored if r.verdict is not None and r.verdict.score == median]
    rep = at_median[0]
    confidence = round(sum(v.confidence for v in at_median) / len(at_median), 3)
    return CriterionDraft(
        criterion_id=criterion_id, status="scored", score=median, rationale=rep.rationale,
        citations=citations_of(rep), confidence=confidence, flags=tuple(flags), samples=per_sample,
        dispersion=float(spread) if len(scores) > 1 else None,
    )


def to_citations(verdict: Verdict, locations: dict[str, tuple[str, int, int]]) -> tuple[Citation, ...]:
    """Model citations, completed with the evidence item's location where the model gave no lines."""
    out: list[Citation] = []
    seen: set[tuple] = set()
    for c in verdict.citations:
        loc = locations.get(c.evidence_id)
        file = c.file or (loc[0] if loc else None)
        start, end = c.start_line, c.end_line if c.end_line is not None else c.start_line
        if start is None and loc and file == loc[0]:
            start, end = loc[1], loc[2]
        key = (c.evidence_id, file, start, end, c.quote)
        if key not in seen:
            seen.add(key)
            out.append(Citation(evidence_id=c.evidence_id, file=file, start_line=start, end_line=end, quote=c.quote))
    return tuple(out)
