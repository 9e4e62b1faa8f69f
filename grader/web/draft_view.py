"""What the draft page shows, computed once from a draft, its rubric and its source files.

The same view feeds the served page (with review state and forms) and the standalone HTML report
(`grader evaluate --format html`); only the links differ (`Links`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import quote, urlencode

from markupsafe import Markup, escape

from evidence.model import AnalyzerFailure, EvidenceBundle, EvidenceItem, Severity
from grader.draft import Citation, CriterionDraft, Draft, Flag
from grader.errors import GraderError
from grader.rubric import Level, Rubric, load_rubric
from grader.service.views import CriterionState, Evaluation, ReviewView
from grader.web.per_draft import per_draft
from grader.web.source import highlight_excerpt, line_anchor

_BRACKETED = re.compile(r"\[([A-Za-z0-9_.:/@\-]+(?:\[[0-9,]*\])?[A-Za-z0-9_.:/@\-]*)\]")
SIM_FINDING_KINDS = ("sim.error", "sim.incomplete", "sim.finding", "sim.reference_error", "sim.unsupported_dialect")
NUMERICS_KINDS = ("sim.output", "numerics.")
PERF_PREFIX = "perf."
ROOFLINE_KIND = "perf.roofline"
_BLOCKER_WORDS = {"calibration": "calibration gate failed", "the": "calibration gate failed in a newer run",
                  "far_from_gold": "far_from_gold"}
# Flags a reviewer must act on before sign-off (grader.service.review.BLOCKING_FLAGS) read as alerts.
ALERT_FLAGS = ("contradicts_evidence", "far_from_gold")


class Links(Protocol):
    """Where the page's links point: the server's pages, or anchors inside one standalone file."""

    def source(self, file: str, start: int | None = None, end: int | None = None, evidence: str | None = None) -> str: ...

    def evidence(self, evidence_id: str) -> str: ...

    def citation(self, criterion_id: str, n: int, citation: Citation) -> str: ...


def evidence_anchor(evidence_id: str) -> str:
    return f"ev:{evidence_id}"


def citation_anchor(criterion_id: str, n: int) -> str:
    return f"cite-{criterion_id}-{n}"


def span_text(file: str | None, start: int | None, end: int | None) -> str:
    if not file:
        return ""
    if start is None:
        return file
    return f"{file}:{start}" + (f"-{end}" if end and end != start else "")


@dataclass(frozen=True)
class ServedLinks:
    evaluation_id: str
    prefix: str = "/ui"

    def source(self, file: str, start: int | None = None, end: int | None = None, evidence: str | None = None) -> str:
        query = {}
        if start is not None:
            query["lines"] = f"{start}-{end or start}"
        if evidence:
            query["evidence"] = evidence
        url = f"{self.prefix}/evaluations/{quote(self.evaluation_id)}/source/{quote(file)}"
        return url + (f"?{urlencode(query)}" if query else "") + (f"#{line_anchor(file, start)}" if start else "")

    def evidence(self, evidence_id: str) -> str:
        return f"{self.prefix}/evaluations/{quote(self.evaluation_id)}#{quote(evidence_anchor(evidence_id), safe=':')}"

    def citation(self, criterion_id: str, n: int, citation: Citation) -> str:
        if citation.file:
            return self.source(citation.file, citation.start_line, citation.end_line, citation.evidence_id)
        return self.evidence(citation.evidence_id)


@dataclass(frozen=True)
class StandaloneLinks:
    """Everything is in the one file: sources are listed at the end, citations have panels."""

    def source(self, file: str, start: int | None = None, end: int | None = None, evidence: str | None = None) -> str:
        return f"#{line_anchor(file, start or 1)}"

    def evidence(self, evidence_id: str) -> str:
        return f"#{quote(evidence_anchor(evidence_id), safe=':')}"

    def citation(self, criterion_id: str, n: int, citation: Citation) -> str:
        return f"#{citation_anchor(criterion_id, n)}"


@dataclass(frozen=True)
class CitationView:
    criterion_id: str
    n: int
    citation: Citation
    item: EvidenceItem | AnalyzerFailure | None

    @property
    def anchor(self) -> str:
        return citation_anchor(self.criterion_id, self.n)

    @property
    def where(self) -> str:
        c = self.citation
        return span_text(c.file, c.start_line, c.end_line)

    @property
    def title(self) -> str:
        if self.item is None:
            return "(not in the evidence bundle)"
        return self.item.title if isinstance(self.item, EvidenceItem) else f"{self.item.analyzer} failed: {self.item.message}"


@dataclass(frozen=True)
class CriterionView:
    draft: CriterionDraft
    title: str
    description: str
    citations: tuple[CitationView, ...]
    levels: tuple[Level, ...] = ()
    state: CriterionState | None = None
    reviews: tuple[ReviewView, ...] = ()

    @property
    def id(self) -> str:
        return self.draft.criterion_id

    @property
    def alerts(self) -> tuple[Flag, ...]:
        return tuple(f for f in self.draft.flags if f.code in ALERT_FLAGS)

    @property
    def notes(self) -> tuple[Flag, ...]:
        return tuple(f for f in self.draft.flags if f.code not in ALERT_FLAGS)

    @property
    def changed(self) -> bool:
        return self.state is not None and self.state.current != self.state.drafted

    @property
    def blocker_summary(self) -> str:
        """The blockers in a few words ('contradicts_evidence x3; calibration gate failed'); the flags
        themselves are shown in full above the forms."""
        words = [_BLOCKER_WORDS.get(b.split(":", 1)[0].split(" ")[0], b.split(":", 1)[0][:80]) if not b.startswith("flagged ")
                 else b.split(":", 1)[0].removeprefix("flagged ") for b in (self.state.blockers if self.state else [])]
        return "; ".join(f"{w} x{n}" if n > 1 else w for w, n in Counter(words).items())

    @property
    def needs_ack(self) -> bool:
        return self.state is not None and bool(self.state.blockers) and not self.state.acknowledged


@dataclass(frozen=True)
class EvidenceGroup:
    collector: str
    version: str
    items: tuple[EvidenceItem, ...]

    @property
    def notable(self) -> int:
        return sum(1 for i in self.items if i.severity != Severity.info)


@dataclass(frozen=True)
class Finding:
    item: EvidenceItem
    excerpt: Markup | None  # the finding's lines with a little context, highlighted


@dataclass(frozen=True)
class EvidenceView:
    """What the page shows of the evidence bundle: the same for every request of one draft."""

    groups: tuple[EvidenceGroup, ...]
    findings: tuple[Finding, ...]
    numerics: tuple[EvidenceItem, ...]
    perf: tuple[EvidenceItem, ...]
    by_id: dict[str, EvidenceItem | AnalyzerFailure]  # the bundle's items and failures by id
    bundle_hash: str


@dataclass
class DraftView:
    draft: Draft
    rubric: Rubric | None
    criteria: tuple[CriterionView, ...]
    evidence: EvidenceView
    files: dict[str, str]
    task_title: str | None = None
    evaluation: Evaluation | None = None
    scale_max: int = 5
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def groups(self) -> tuple[EvidenceGroup, ...]:
        return self.evidence.groups

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.evidence.findings

    @property
    def numerics(self) -> tuple[EvidenceItem, ...]:
        return self.evidence.numerics

    @property
    def perf(self) -> tuple[EvidenceItem, ...]:
        return self.evidence.perf

    @property
    def alerts(self) -> int:
        return sum(len(c.alerts) for c in self.criteria)

    @property
    def pending_acks(self) -> tuple[CriterionView, ...]:
        return tuple(c for c in self.criteria if c.needs_ack)

    @property
    def roofline(self) -> EvidenceItem | None:
        return next((i for i in self.perf if i.kind == ROOFLINE_KIND), None)

    def linked(self, text: str, links: Links) -> Markup:
        """Text with every bracketed evidence id of this bundle ('[sim.output:0]') made a link to the item."""
        ids = self.evidence.by_id
        out, last = [], 0
        for match in _BRACKETED.finditer(text):
            if match.group(1) in ids:
                out += [escape(text[last:match.start()]),
                        Markup('[<a href="{}">{}</a>]').format(links.evidence(match.group(1)), match.group(1))]
                last = match.end()
        return Markup("").join([*out, escape(text[last:])])

    def score_text(self, status: str, score: int | None) -> str:
        return f"{score} / {self.scale_max}" if status == "scored" else status.replace("_", " ")


def _rubric(draft: Draft, rubric: Rubric | None, dirs: tuple[Path, ...] | None) -> Rubric | None:
    if rubric is not None:
        return rubric
    try:
        return load_rubric(draft.rubric.id, dirs)
    except GraderError:  # a stored draft of a rubric no longer shipped still renders, with criterion ids
        return None


def excerpt(files: dict[str, str], file: str | None, start: int | None, end: int | None, anchor: str) -> Markup | None:
    """The lines start..end of a submission file with a little context, highlighted (None if absent)."""
    if not file or start is None or file not in files:
        return None
    return highlight_excerpt(file, files[file], start, end, prefix=anchor)


def _groups(items: Iterable[EvidenceItem]) -> tuple[EvidenceGroup, ...]:
    by: dict[str, list[EvidenceItem]] = {}
    for item in items:
        by.setdefault(item.analyzer, []).append(item)
    out = []
    for analyzer, members in by.items():
        name, _, version = analyzer.partition("@")
        ranked = sorted(members, key=lambda i: -i.severity.rank)  # stable: keeps the bundle's order per severity
        out.append(EvidenceGroup(name, version, tuple(ranked)))
    return tuple(sorted(out, key=lambda g: g.collector))


def build(draft: Draft, files: dict[str, str], *, rubric: Rubric | None = None, evaluation: Evaluation | None = None,
          task_title: str | None = None, rubric_dirs: tuple[Path, ...] | None = None) -> DraftView:
    """The page's view of a draft; without `rubric`, the draft's rubric from `rubric_dirs` (the server's
    settings; None reads the settings from the environment, which costs milliseconds)."""
    rubric = _rubric(draft, rubric, rubric_dirs)
    states = {s.criterion_id: s for s in evaluation.criteria} if evaluation else {}
    reviews = evaluation.reviews if evaluation else []
    bundle = draft.evidence
    evidence = per_draft.get(draft, ("evidence", tuple(sorted(files.items()))), lambda: _evidence(bundle, files))
    criteria = []
    for c in draft.criteria:
        spec = next((k for k in rubric.criteria if k.id == c.criterion_id), None) if rubric else None
        cites = tuple(CitationView(c.criterion_id, n, cit, evidence.by_id.get(cit.evidence_id))
                      for n, cit in enumerate(c.citations, 1))
        criteria.append(CriterionView(
            draft=c, title=spec.title if spec else c.criterion_id, description=spec.description.strip() if spec else "",
            citations=cites, levels=tuple(sorted(spec.levels, key=lambda lv: -lv.score)) if spec else (),
            state=states.get(c.criterion_id),
            reviews=tuple(r for r in reviews if r.criterion_id == c.criterion_id)))
    return DraftView(
        draft=draft, rubric=rubric, criteria=tuple(criteria),
        evidence=evidence,
        files=files, task_title=task_title, evaluation=evaluation, scale_max=rubric.scale_max if rubric else 5)


def _evidence(bundle: EvidenceBundle, files: dict[str, str]) -> EvidenceView:
    found = [i for i in bundle.items if i.kind in SIM_FINDING_KINDS]
    findings = tuple(Finding(i, excerpt(files, i.location.file, i.location.start_line, i.location.end_line,
                                        f"finding-{n}-L") if i.location else None) for n, i in enumerate(found, 1))
    return EvidenceView(
        groups=_groups(bundle.items), findings=findings,
        numerics=tuple(i for i in bundle.items if i.kind.startswith(NUMERICS_KINDS)),
        perf=tuple(i for i in bundle.items if i.kind.startswith(PERF_PREFIX)),
        by_id={i.id: i for i in (*bundle.failures, *reversed(bundle.items))}, bundle_hash=bundle.bundle_hash)
