"""Evidence from a submission's benchmark claims and the author's notes about them.

Each claim is a fact (`claims.claim`); each methodology gap a finding (`claims.methodology`). A gap
that comes from the file's `[method]` (no variance reported, compile time not excluded, ...) concerns
every claim and is reported once, at the `[method]` table; a claim's own overrides give per-claim
gaps. Baseline/candidate parity (dtypes from the claim, the kernel's inputs or the notes; shapes)
is checked per claim. `NOTES.md` and the claims file's free text are searched for admissions
(`claims.note`: no hardware used, figures from a model, the baseline's precision); figures labelled
measured while the notes say no device or a model produced them are `presented_as_measured`.
"""

from __future__ import annotations

from typing import ClassVar

from evidence.collector import Collector
from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.nki.dtypes import significand_bits
from evidence.perf.claims import file_level, methodology_gaps, parity_gaps, parse_claims, physical_gaps
from evidence.perf.notes import admissions, claims_free_text
from evidence.submission import Submission

_NOTE_SEVERITY = {"no_hardware": Severity.high, "model_figures": Severity.high, "baseline_precision": Severity.medium}
_NOTE_TITLES = {
    "no_hardware": "the author writes that no Trainium device was used",
    "model_figures": "the author writes that the figures come from a simulator, a model or an estimate",
    "baseline_precision": "the author writes that the baseline ran in {dtype}",
}


def _line_of(text: str, needle: str, default: int = 1) -> int:
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return n
    return default


def kernel_dtype(submission: Submission) -> str | None:
    """The lowest-precision float dtype among the kernel's tensor inputs (the candidate's precision)."""
    # an exponent-only dtype (the MX block scale float8_e8m0fnu, 1 bit) scales data, it is not what it computes in
    floats = [i.dtype for i in submission.manifest.inputs if i.is_tensor and (significand_bits(i.dtype) or 0) > 1]
    return min(floats, key=significand_bits) if floats else None


class ClaimsCollector(Collector):
    name = "claims"
    version = "0.3.0"
    kinds: ClassVar[dict[str, str]] = {
        "claims.claim": "a benchmark claim as stated by the author (metric, value, baseline, method)",
        "claims.methodology": "a gap in how a claim was obtained (no warm-up, unsynchronised timer, mismatched "
                              "precision or shapes between baseline and candidate, figures presented as measured "
                              "that the notes say are not, ...) or a claim beyond coarse physical bounds",
        "claims.note": "an admission in the author's notes or the claims file's free text: no hardware used, "
                       "figures from a model or simulator, the baseline's precision",
    }

    def applies(self, submission: Submission) -> bool:
        return submission.manifest.claims is not None

    def collect(self, submission: Submission) -> list[EvidenceItem]:
        m = submission.manifest
        file = m.claims.file  # type: ignore[union-attr]
        text = submission.files[file]
        claims = parse_claims(text, file)
        notes = self._notes(submission, text)
        noted_dtype = next((n[1].dtype for n in notes if n[1].code == "baseline_precision"), None)
        items: list[EvidenceItem] = [n[2] for n in notes]
        method_loc = Location(file=file, start_line=(ln := _line_of(text, "[method]")), end_line=ln)
        file_gaps: dict[str, tuple] = {}
        for claim in claims.claim:
            method = claims.effective_method(claim)
            line = _line_of(text, f'"{claim.id}"')
            loc = Location(file=file, start_line=line, end_line=line)
            items.append(self._claim_item(claim, method, loc))
            gaps = (methodology_gaps(claim, method) + physical_gaps(claim, method, m.task.target)
                    + parity_gaps(claim, kernel_dtype(submission), m.task.rtol, noted_dtype))
            for gap in gaps:
                if file_level(gap, claim):
                    file_gaps.setdefault(gap.code, (gap, []))[1].append(claim.id)
                    continue
                items.append(EvidenceItem(
                    id=make_id("claims.methodology", claim.id, gap.code), kind="claims.methodology",
                    analyzer=self.analyzer, severity=Severity(gap.severity), title=f"Claim {claim.id}: {gap.message}",
                    location=loc, labels={"code": gap.code, "claim": claim.id, "scope": "claim"},
                ))
        for code, (gap, ids) in file_gaps.items():
            items.append(EvidenceItem(
                id=make_id("claims.methodology", "file", code), kind="claims.methodology", analyzer=self.analyzer,
                severity=Severity(gap.severity), title=f"Claims method: {gap.message}", location=method_loc,
                detail=f"the file's [method] applies it to every claim: {', '.join(ids)}",
                labels={"code": code, "claim": ",".join(ids), "scope": "file"},
            ))
        measured = [c.id for c in claims.claim if claims.effective_method(c).source == "measured"]
        denial = next((n for n in notes if n[1].code in ("no_hardware", "model_figures")), None)
        if measured and denial is not None:
            nfile, adm, note_item = denial
            items.append(EvidenceItem(
                id=make_id("claims.methodology", "file", "presented_as_measured"), kind="claims.methodology",
                analyzer=self.analyzer, severity=Severity.critical, location=note_item.location,
                title=f"Claims labelled measured ({', '.join(measured)}) while {nfile}:{adm.line} says "
                      f"{_NOTE_TITLES[adm.code].removeprefix('the author writes that ')}",
                labels={"code": "presented_as_measured", "claim": ",".join(measured), "scope": "file",
                        "excerpt": adm.excerpt},
            ))
        return items

    def _claim_item(self, claim, method, loc: Location) -> EvidenceItem:
        metrics = {"value": claim.value}
        if claim.baseline_value is not None:
            metrics["baseline_value"] = claim.baseline_value
        labels = {"metric": claim.metric, "source": method.source or "unstated",
                  "baseline": claim.baseline or "", "dtype": claim.dtype or ""}
        return EvidenceItem(
            id=make_id("claims.claim", claim.id), kind="claims.claim", analyzer=self.analyzer,
            title=f"Claim {claim.id}: {claim.metric} = {claim.value:g}", location=loc,
            detail=f"baseline: {claim.baseline or 'none'}; method: {method.model_dump(exclude_none=True)}",
            metrics=metrics, labels=labels,
        )

    def _notes(self, submission: Submission, claims_text: str) -> list[tuple]:
        """(file, admission, item) for each admission in NOTES.md and the claims file's free text."""
        sources = []
        if submission.manifest.notes and submission.manifest.notes.file in submission.files:
            sources.append((submission.manifest.notes.file, submission.files[submission.manifest.notes.file]))
        sources.append((submission.manifest.claims.file, claims_free_text(claims_text)))  # type: ignore[union-attr]
        out = []
        for file, text in sources:
            for adm in admissions(text):
                title = _NOTE_TITLES[adm.code].format(dtype=adm.dtype)
                out.append((file, adm, EvidenceItem(
                    id=make_id("claims.note", adm.code, file, adm.line), kind="claims.note", analyzer=self.analyzer,
                    severity=_NOTE_SEVERITY[adm.code], title=f"{file}:{adm.line}: {title}",
                    location=Location(file=file, start_line=adm.line, end_line=adm.line),
                    labels={"code": adm.code, "dtype": adm.dtype, "excerpt": adm.excerpt},
                )))
        return out
