"""Calibrated confidence for rules drafts: how often a draft in this state agrees with expert gold.

A rules draft's confidence is the probability that its score equals the gold score, estimated on
the calibration set for the criterion and the *state* the score was reached in:

- `conflict`: the simulation contradicts a static finding the criterion rests on;
- `capped_measured` / `capped_static`: a cap decides the score, on measured evidence (the
  simulation, or a static finding the trace confirmed or the measured error showed) or on a
  static finding alone;
- `unobserved`: no cap decides the score and the evidence says the simulation stopped before it observed
  what the criterion is about (the rubric's `unobserved` rules): the score was read from the source alone;
- `penalised`: penalties lowered the score and no cap applies;
- `supported`: no rule lowered the score and positive evidence backs it;
- `unsupported`: no rule lowered the score and no positive evidence was found.

`evals/fit_confidence.py` drafts every item of a calibration set and counts, per criterion and state,
how many drafts equalled gold; the counts live in `<rubric id>.confidence.json` beside the rubric file. The estimate
shrinks a sparse cell towards the state's rate over all criteria: (agree + M * p_state) / (n + M),
with p_state = (agree_state + 1) / (n_state + 2). Without a table the draft says so: confidence is
then the share of the criterion's basis kinds present, as before calibration.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from evidence.model import EvidenceItem
from grader.evidence_rules import RuleOutcome
from grader.resources import shipped_dir
from grader.rubric import Criterion, available_rubrics

STATES = ("conflict", "capped_measured", "capped_static", "unobserved", "penalised", "supported", "unsupported")
SHRINK = 4.0  # pseudo-items of the state's pooled rate added to each criterion's cell


def _measured(item: EvidenceItem) -> bool:
    return (item.kind.startswith(("sim.", "migration.", "claims.", "perf.", "security."))
            or item.labels.get("trace") == "confirmed" or item.labels.get("measured") == "shown")


def draft_state(outcome: RuleOutcome, score: int, conflicted: bool) -> str:
    """The state a rules score was reached in (see the module doc)."""
    if conflicted:
        return "conflict"
    deciding = [h for h in outcome.hits if h.rule.cap is not None and h.rule.cap == score]
    if deciding:
        return "capped_measured" if any(_measured(i) for h in deciding for i in h.items) else "capped_static"
    if outcome.unobserved:
        return "unobserved"
    if outcome.penalty:
        return "penalised"
    return "supported" if outcome.supports else "unsupported"


def table_path(rubric_id: str) -> Path:
    """Beside the rubric file in use: a user rubric that overrides a shipped one is not calibrated by
    the shipped table."""
    rubric_file = available_rubrics().get(rubric_id)
    return (rubric_file.parent if rubric_file else shipped_dir("rubrics")) / f"{rubric_id}.confidence.json"


@cache
def load_table(rubric_id: str) -> dict | None:
    path = table_path(rubric_id)
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def estimate(table: dict, criterion_id: str, state: str) -> float:
    """Smoothed agreement rate of `state` drafts of `criterion_id` (see the module doc)."""
    pooled = table.get("states", {}).get(state, [0, 0])
    p_state = (pooled[0] + 1.0) / (pooled[1] + 2.0)
    agree, n = table.get("criteria", {}).get(criterion_id, {}).get(state, [0, 0])
    return round((agree + SHRINK * p_state) / (n + SHRINK), 3)


def fit(outcomes: list[tuple[str, str, bool]]) -> dict:
    """Counts from (criterion id, state, agreed with gold) triples."""
    criteria: dict[str, dict[str, list[int]]] = {}
    states: dict[str, list[int]] = {}
    for criterion_id, state, agreed in outcomes:
        cell = criteria.setdefault(criterion_id, {}).setdefault(state, [0, 0])
        pooled = states.setdefault(state, [0, 0])
        for c in (cell, pooled):
            c[0] += int(agreed)
            c[1] += 1
    return {"criteria": criteria, "states": states}


def confidence(criterion: Criterion, rubric_id: str, state: str, basis_coverage: float) -> float:
    table = load_table(rubric_id)
    if table is None:
        return round(0.5 + 0.5 * basis_coverage, 3)
    return estimate(table, criterion.id, state)


def calibration_error(pairs: list[tuple[float, bool]], bins: int = 10) -> float:
    """Expected calibration error: the mean |confidence - accuracy| over equal-width confidence bins,
    weighted by the drafts in each."""
    if not pairs:
        return 0.0
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inside = [(c, ok) for c, ok in pairs if lo <= c < hi or (b == bins - 1 and c == 1.0)]
        if inside:
            mean_c = sum(c for c, _ in inside) / len(inside)
            acc = sum(ok for _, ok in inside) / len(inside)
            total += len(inside) * abs(mean_c - acc)
    return total / len(pairs)
