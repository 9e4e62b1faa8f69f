"""What a rules draft says beyond its score: why a high score is high, what was not observed, and where the
evidence disagrees.

- Support: a criterion scored 4 or 5 names the positive evidence that earns it (the rubric's
  `support` rules: masks over the ragged tail, fp32 PSUM accumulation, each HBM byte read once,
  full partitions, ...), each with its evidence id, instead of "no rule objected".
- Not observed: when the simulation stopped before it observed what the criterion is about (the rubric's
  `unobserved` rules: it stopped on an error, could not finish, or the kernel imports APIs no release has),
  the score was read from the source alone: the rationale says so with the evidence and where, and an
  `unobserved` flag tells the reviewer a 5 there is not "checked and excellent".
- Conflicts: an `evidence.conflict` item (a static finding the simulation contradicts) whose
  static side this criterion may cite becomes an `evidence_conflict` flag citing both sides; the
  contradicted finding caps nothing, and a reviewer settles which analyzer misread the code.
"""

from __future__ import annotations

from evidence.corroborate import CONFLICT_KIND
from evidence.model import EvidenceBundle, EvidenceItem
from grader.draft import Flag
from grader.evidence_rules import RuleOutcome
from grader.rubric import Criterion

HIGH = 4  # scores from here on must say what earns them
MAX_SUPPORT_ITEMS = 2  # per support rule, in the rationale and the citations


def support_items(outcome: RuleOutcome) -> list[EvidenceItem]:
    return [i for hit in outcome.supports for i in hit.items[:MAX_SUPPORT_ITEMS]]


def support_sentence(outcome: RuleOutcome, score: int) -> str:
    """The rationale's account of a high score: each support rule that matched, with its evidence."""
    if score < HIGH:
        return ""
    if not outcome.supports:
        return " No positive evidence found for this level: it rests on the absence of defects only."
    return " Why it is this high: " + _named(outcome.supports, where=False) + "."


def _where(item: EvidenceItem) -> str:
    loc = item.location
    return f" at {loc.file}:{loc.start_line}" if loc is not None else ""


def _named(hits, where: bool) -> str:
    """Each rule that matched with the evidence it matched (titles and ids, and where with `where`)."""
    return "; ".join(f"{hit.rule.description} (" + "; ".join(
        f"{i.title} [{i.id}]" + (_where(i) if where else "") for i in hit.items[:MAX_SUPPORT_ITEMS]) + ")" for hit in hits)


def unobserved_sentence(outcome: RuleOutcome) -> str:
    """Why the score rests on the source alone (the rubric's `unobserved` rules that matched), with the evidence
    that says so and where, or "" when the criterion was observed."""
    if not outcome.unobserved:
        return ""
    return " Judged on the source alone, not observed: " + _named(outcome.unobserved, where=True) + "."


def unobserved_flags(criterion: Criterion, outcome: RuleOutcome) -> list[Flag]:
    """An `unobserved` flag naming the first reason (the rationale has them all): a reviewer must not read the
    score as checked on a run."""
    if not outcome.unobserved:
        return []
    first = outcome.unobserved[0]
    item = first.items[0]
    return [Flag(code="unobserved", message=f"{criterion.id} judged on the source alone: {first.rule.description} "
                 f"({item.title}{_where(item)})", evidence_id=item.id)]


def conflicts(criterion: Criterion, bundle: EvidenceBundle) -> list[tuple[EvidenceItem, EvidenceItem | None]]:
    """(conflict item, its static finding) for the conflicts whose static side the criterion may cite."""
    out = []
    for c in bundle.of_kind(CONFLICT_KIND):
        if criterion.cites(c.labels.get("rule", "")):
            static = bundle.get(c.labels.get("static", ""))
            out.append((c, static if isinstance(static, EvidenceItem) else None))
    return out


def conflict_flags(found: list[tuple[EvidenceItem, EvidenceItem | None]]) -> list[Flag]:
    return [Flag(code="evidence_conflict", message=f"{c.title} (static {c.labels.get('static')}; trace "
                 f"{c.labels.get('dynamic') or '-'})", evidence_id=c.id) for c, _ in found]
