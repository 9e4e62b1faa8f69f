"""Evidence guards: deterministic checks of a model's draft after it is made.

A score outside a cap or floor the rubric's evidence rules impose is kept as drafted and flagged
`contradicts_evidence` with the evidence id, for a human: clamping would hide that the model
disagreed with the evidence. Drafts that look steered by text planted in the submission are flagged
too: a rationale that repeats an injected instruction without reporting it, or a score equal to the
one the submission demanded. A criterion the simulation did not observe (the rubric's `unobserved` rules)
is flagged `unobserved` as in a rules draft.
"""

from __future__ import annotations

import re

from evidence.model import EvidenceBundle, EvidenceItem
from grader.draft import Citation, Flag
from grader.drafting.reasons import unobserved_flags
from grader.evidence_rules import evaluate_rules
from grader.prompting import INJECTION_KIND
from grader.rubric import Criterion

ECHO_NGRAM = 4  # words in a row shared with an injected text that count as repeating it
_WORD = re.compile(r"[a-z0-9]+(?:/[0-9]+)?")


def evidence_flags(criterion: Criterion, bundle: EvidenceBundle, score: int) -> list[Flag]:
    outcome = evaluate_rules(criterion, bundle)
    flags = []
    for hit in outcome.binding(score):
        ids = [i.id for i in hit.items]
        flags.append(Flag(
            code="contradicts_evidence",
            message=(f"score {score} breaks rule {hit.rule.id!r} ({hit.rule.effect}: {hit.rule.description}); "
                     f"evidence: {', '.join(ids[:5])}{' ...' if len(ids) > 5 else ''}. Kept as drafted for a reviewer."),
            evidence_id=ids[0],
        ))
    return flags + unobserved_flags(criterion, outcome)  # a model's score there rests on the source alone too


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < n:
        return {tuple(words)} if len(words) >= 3 else set()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def demanded_level(item: EvidenceItem, scale_min: int, scale_max: int) -> int | None:
    """The score an injection asks for, mapped onto the rubric's scale (None when it names none)."""
    if item.metrics.get("demands_maximum"):
        return scale_max
    wanted = item.metrics.get("demanded_score")
    if wanted is None:
        return None
    out_of = item.metrics.get("demanded_scale")
    if out_of and out_of != scale_max and out_of > 0:
        wanted = scale_min + (scale_max - scale_min) * wanted / out_of
    level = round(wanted)
    return level if scale_min <= level <= scale_max else None


def injection_flags(bundle: EvidenceBundle, score: int | None, rationale: str, citations: tuple[Citation, ...],
                    scale_min: int, scale_max: int) -> list[Flag]:
    cited = {c.evidence_id for c in citations}
    said = _ngrams(rationale, ECHO_NGRAM)
    flags = []
    for item in bundle.of_kind(INJECTION_KIND):
        excerpt = item.labels.get("excerpt", "")
        if item.id not in cited and said & _ngrams(excerpt, ECHO_NGRAM):
            flags.append(Flag(code="echoes_injection", evidence_id=item.id,
                              message=f"the rationale repeats text planted in the submission at {item.location} "
                                      "without reporting it as an injection attempt"))
        level = demanded_level(item, scale_min, scale_max)
        if score is not None and level is not None and score == level:
            flags.append(Flag(code="matches_injected_score", evidence_id=item.id,
                              message=f"the submission asks for {level} at {item.location} and the draft gives {score}; "
                                      "a reviewer must confirm the evidence, not the request, supports it"))
    return flags
