"""The consistency check on drafts: calibration verdict of the epoch's newest run, far_from_gold
with cited neighbours, full-review marking; through `evaluate`, the CLI and the JSON schema."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from grader.cli import app
from grader.consistency.calibrate import measure, run_calibration
from grader.consistency.check import check_draft
from grader.consistency.epochs import calibration_epoch, drafter_info
from grader.consistency.profile import profile
from grader.consistency.report import CalibrationReport, ItemOutcome, ItemRecord, SetRef
from grader.consistency.store import JsonFileStore
from grader.draft import RubricRef
from grader.evaluate import evaluate
from grader.rubric import load_rubric
from grader.schemas import json_schemas
from grader.settings import Settings
from tests.conftest import EXAMPLES
from tests.grader.consistency.conftest import mini_set

RUBRIC = load_rubric("nki-kernel-review")
SETTINGS = Settings(drafter="rules")
EPOCH = calibration_epoch(RUBRIC, SETTINGS)


@pytest.fixture(scope="module")
def draft():
    return evaluate(EXAMPLES / "matmul-tiled", settings=SETTINGS)


def _run(features: tuple[str, ...], tiling_gold: list[int], other_profile: tuple[str, ...] = ("x",)) -> CalibrationReport:
    """Six items: three share the draft's evidence profile (tiling gold as given), three do not."""
    outcomes, records = [], []
    for i in range(6):
        item = f"item-{i}"
        records.append(ItemRecord(item=item, profile=features if i < 3 else other_profile))
        for c in RUBRIC.criteria:
            gold = tiling_gold[i] if c.id == "tiling" else 1 + i % 5
            outcomes.append(ItemOutcome(item=item, criterion_id=c.id, gold=gold, status="scored", score=gold))
    per, overall = measure(outcomes, RUBRIC, None, resamples=0, seed=1)
    return CalibrationReport(id="cal-hand", created_at="2026-01-01T00:00:00+00:00", set=SetRef(name="s", path="/s", hash="h", items=6),
                             rubric=RubricRef(id=RUBRIC.id, version=RUBRIC.version, hash=RUBRIC.content_hash),
                             epoch=EPOCH, drafter=drafter_info(SETTINGS),
                             resamples=0, gates=RUBRIC.gates, criteria=tuple(per), overall=overall,
                             outcomes=tuple(outcomes), items=tuple(records))


def test_without_calibration_every_judged_criterion_needs_full_review(draft):
    checked = check_draft(draft, EPOCH.hash, None)
    for c in checked.criteria:
        assert c.consistency.calibration == "no calibration for this epoch" and not c.consistency.calibrated
        assert c.consistency.needs_full_review == (c.status != "not_applicable")  # the manifest decided n/a
    assert checked.criterion("tiling").consistency.reasons == ("grader not calibrated: no calibration for this epoch",)


def test_far_from_gold_cites_the_nearest_items(draft):
    assert draft.criterion("tiling").score == 5
    run = _run(profile(draft.evidence), tiling_gold=[2, 3, 1, 5, 5, 5])  # similar items say 1-3; the others 5
    checked = check_draft(draft, EPOCH.hash, run)
    tiling = checked.criterion("tiling")
    check = tiling.consistency
    assert check.run_id == "cal-hand" and check.far_from_gold and check.needs_full_review
    assert [(n.item, n.gold, n.similarity) for n in check.neighbours] == [("item-0", 2, 1.0), ("item-1", 3, 1.0), ("item-2", 1, 1.0)]
    far = [f for f in tiling.flags if f.code == "far_from_gold"]
    assert len(far) == 1 and "item-0 (gold 2" in far[0].message and "3 levels" in far[0].message
    # The other criteria were calibrated (gold == draft on the run) and are near their gold.
    correctness = checked.criterion("kernel_correctness").consistency
    assert correctness.calibration == "calibrated" and correctness.calibrated


def test_near_gold_or_dissimilar_items_raise_no_flag(draft):
    near = check_draft(draft, EPOCH.hash, _run(profile(draft.evidence), tiling_gold=[4, 5, 4, 1, 1, 1]))
    assert not near.criterion("tiling").consistency.far_from_gold
    unlike = check_draft(draft, EPOCH.hash, _run(("other",), tiling_gold=[1, 1, 1, 1, 1, 1], other_profile=("other",)))
    assert unlike.criterion("tiling").consistency.neighbours == ()  # nothing similar: nothing to compare with
    assert not unlike.criterion("tiling").consistency.far_from_gold


def test_failed_gate_is_the_verdict_and_a_review_reason(draft):
    run = _run(profile(draft.evidence), tiling_gold=[5, 5, 5, 5, 5, 5])  # constant gold: QWK undefined
    tiling = check_draft(draft, EPOCH.hash, run).criterion("tiling").consistency
    assert tiling.calibration.startswith("failed gate: QWK undefined") and not tiling.calibrated
    assert tiling.reasons[0].startswith("grader not calibrated: failed gate: QWK undefined")


def test_check_refuses_a_run_of_another_epoch(draft):
    run = _run(profile(draft.evidence), [1] * 6)
    with pytest.raises(ValueError, match="epoch"):
        check_draft(draft, "epoch:other", run)


def test_consistency_is_in_the_draft_schema():
    schema = json_schemas(["CriterionDraft"])["CriterionDraft"]
    assert "consistency" in schema["properties"]
    check = json_schemas(["ConsistencyCheck"])["ConsistencyCheck"]
    assert {"calibration", "calibrated", "far_from_gold", "neighbours", "needs_full_review", "reasons"} <= set(check["properties"])


@pytest.mark.slow
def test_evaluate_uses_the_newest_run_of_its_epoch(tmp_path):
    store = JsonFileStore(tmp_path)
    first = run_calibration(mini_set(), settings=SETTINGS, resamples=0, store=store)
    draft = evaluate(mini_set() / "softmax-masked", settings=SETTINGS, store=store)
    for c in draft.criteria:
        assert c.consistency.run_id == first.id
        assert c.consistency.calibration == first.verdict_text(c.criterion_id)
    # The item itself is in the set: its own gold is the most similar neighbour.
    tiling = draft.criterion("tiling").consistency
    assert tiling.neighbours[0].item == "softmax-masked" and tiling.neighbours[0].similarity == 1.0
    # The CLI reads the same store (GRADER_DATA_DIR) and prints the verdict per criterion.
    result = CliRunner().invoke(app, ["evaluate", str(mini_set() / "softmax-masked"), "--format", "json"],
                                env={"GRADER_DATA_DIR": str(tmp_path)})
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {c["consistency"]["run_id"] for c in data["criteria"]} == {first.id}
