"""The consistency check on every draft: calibration verdict, distance from similar gold items.

For each criterion of a draft:
(a) the gate verdict of the newest calibration run of the draft's grader epoch (store
    `latest_run(epoch, rubric)`), or "no calibration for this epoch";
(b) `far_from_gold`: the drafted score is two or more levels from the median gold score of its
    nearest calibration items by evidence profile (`profile.py`), up to NEIGHBOURS items with a
    similarity of at least MIN_SIMILARITY; the neighbours are cited either way;
(c) the drafter's own `contradicts_evidence` and dispersion (`unstable_samples`) flags stay.
A criterion that is not calibrated, is far from gold, contradicts the evidence or is unscored is
marked `needs_full_review`, with the reasons.
"""

from __future__ import annotations

import statistics

from grader.consistency.gates import NO_CALIBRATION
from grader.consistency.profile import profile, similarity
from grader.consistency.report import CalibrationReport
from grader.draft import ConsistencyCheck, CriterionDraft, Draft, Flag, GoldNeighbour

NEIGHBOURS = 3
MIN_SIMILARITY = 0.3
FAR_LEVELS = 2
REVIEW_FLAGS = ("contradicts_evidence", "unstable_samples")


def nearest(run: CalibrationReport, features: tuple[str, ...], criterion_id: str) -> list[GoldNeighbour]:
    """Calibration items with a gold score for the criterion, most similar first (ties by item id)."""
    gold = {o.item: o.gold for o in run.outcomes if o.criterion_id == criterion_id and isinstance(o.gold, int)}
    ranked = sorted(((similarity(features, rec.profile), rec.item) for rec in run.items
                     if rec.item in gold and rec.error is None), key=lambda t: (-t[0], t[1]))
    return [GoldNeighbour(item=item, similarity=round(sim, 3), gold=gold[item])
            for sim, item in ranked[:NEIGHBOURS] if sim >= MIN_SIMILARITY]


def check_criterion(c: CriterionDraft, run: CalibrationReport | None, epoch: str,
                    features: tuple[str, ...]) -> CriterionDraft:
    verdict = run.verdict(c.criterion_id) if run else None
    calibration = verdict.summary if verdict else NO_CALIBRATION
    calibrated = bool(verdict and verdict.passed)
    # A not-applicable outcome the manifest decided is not a judgement to review; a model's is.
    judged = c.status != "not_applicable" or any(f.code == "model_not_applicable" for f in c.flags)
    reasons = [] if calibrated or not judged else [f"grader not calibrated: {calibration}"]
    neighbours = nearest(run, features, c.criterion_id) if run and c.status == "scored" else []
    far = False
    flags = list(c.flags)
    if neighbours and c.score is not None:
        centre = statistics.median(n.gold for n in neighbours)
        if abs(c.score - centre) >= FAR_LEVELS:
            far = True
            cited = ", ".join(f"{n.item} (gold {n.gold}, similarity {n.similarity:.2f})" for n in neighbours)
            message = f"score {c.score} is {abs(c.score - centre):g} levels from the gold of the most similar calibration items: {cited}"
            reasons.append(message)
            flags.append(Flag(code="far_from_gold", message=message))
    reasons += [f"flagged {code}" for code in REVIEW_FLAGS if any(f.code == code for f in c.flags)]
    if c.status == "unscored":
        reasons.append(f"unscored: {c.reason}")
    check = ConsistencyCheck(calibration=calibration, calibrated=calibrated, run_id=run.id if run else None,
                             epoch=epoch, neighbours=tuple(neighbours), far_from_gold=far,
                             needs_full_review=bool(reasons), reasons=tuple(reasons))
    return c.model_copy(update={"consistency": check, "flags": tuple(flags)})


def check_draft(draft: Draft, epoch: str, run: CalibrationReport | None) -> Draft:
    """The draft with a ConsistencyCheck on every criterion. `run`: newest calibration of `epoch`."""
    if run is not None and (run.epoch.hash != epoch or run.rubric.id != draft.rubric.id):
        raise ValueError(f"run {run.id} is of epoch {run.epoch.hash}, not the draft's {epoch}")
    features = profile(draft.evidence)
    return draft.model_copy(update={"criteria": tuple(check_criterion(c, run, epoch, features) for c in draft.criteria)})
