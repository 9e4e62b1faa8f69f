"""Evidence from a submission's benchmark claims: each claim as a fact, each methodology gap as a finding."""

from __future__ import annotations

from typing import ClassVar

from evidence.collector import Collector
from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.perf.claims import methodology_gaps, parse_claims, physical_gaps
from evidence.submission import Submission


def _line_of(text: str, needle: str) -> int:
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return n
    return 1


class ClaimsCollector(Collector):
    name = "claims"
    version = "0.2.0"
    kinds: ClassVar[dict[str, str]] = {
        "claims.claim": "a benchmark claim as stated by the author (metric, value, baseline, method)",
        "claims.methodology": "a gap in how a claim was obtained (no warm-up, unsynchronised timer, mismatched "
                              "baseline, ...) or a claim beyond coarse physical bounds (peak FLOPs, HBM bandwidth)",
    }

    def applies(self, submission: Submission) -> bool:
        return submission.manifest.claims is not None

    def collect(self, submission: Submission) -> list[EvidenceItem]:
        file = submission.manifest.claims.file  # type: ignore[union-attr]
        text = submission.files[file]
        claims = parse_claims(text, file)
        items: list[EvidenceItem] = []
        for claim in claims.claim:
            method = claims.effective_method(claim)
            line = _line_of(text, f'"{claim.id}"')
            loc = Location(file=file, start_line=line, end_line=line)
            metrics = {"value": claim.value}
            if claim.baseline_value is not None:
                metrics["baseline_value"] = claim.baseline_value
            labels = {"metric": claim.metric, "source": method.source or "unstated",
                      "baseline": claim.baseline or "", "dtype": claim.dtype or ""}
            items.append(EvidenceItem(
                id=make_id("claims.claim", claim.id), kind="claims.claim", analyzer=self.analyzer,
                title=f"Claim {claim.id}: {claim.metric} = {claim.value:g}", location=loc,
                detail=f"baseline: {claim.baseline or 'none'}; method: {method.model_dump(exclude_none=True)}",
                metrics=metrics, labels=labels,
            ))
            gaps = methodology_gaps(claim, method) + physical_gaps(claim, method, submission.manifest.task.target)
            for gap in gaps:
                items.append(EvidenceItem(
                    id=make_id("claims.methodology", claim.id, gap.code), kind="claims.methodology",
                    analyzer=self.analyzer, severity=Severity(gap.severity), title=f"Claim {claim.id}: {gap.message}",
                    location=loc, labels={"code": gap.code, "claim": claim.id},
                ))
        return items
