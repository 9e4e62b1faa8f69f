"""Hostile submissions through the service, with the import policy and with the sandbox alone.

For every case: the service returns a complete draft within the budget, the attempt is an evidence
item on one of the case's marked lines, nothing outside the job changed, no secret of the grader
reaches the draft, no process is left behind, and the service answers the next request.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from tests.security.cases import CASES, Case
from tests.security.conftest import BUDGET_S, Batch

pytestmark = pytest.mark.slow(minutes=4)
CRITERIA = 10


def _items(view: dict) -> list[dict]:
    return view["draft"]["evidence"]["items"]


def _on_marked_line(case: Case, batch: Batch, kinds: tuple[str, ...]) -> list[dict]:
    marked = case.marked_lines(**batch.values)
    return [i for i in _items(batch.views[case.id]) if i["kind"] in kinds and i.get("location")
            and i["location"]["start_line"] in marked.get(i["location"]["file"], set())]


def test_at_least_thirty_cases():
    assert len(CASES) >= 30 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_hostile_case(batch: Batch, case: Case):
    view = batch.views.get(case.id)
    assert view is not None, f"{case.id}: no finished evaluation"
    assert view["state"] == "done", view.get("error")
    draft = view["draft"]
    assert len(draft["criteria"]) == CRITERIA and all(c["status"] for c in draft["criteria"])
    took = datetime.fromisoformat(view["finished_at"]) - datetime.fromisoformat(view["started_at"])
    assert took.total_seconds() <= BUDGET_S, f"{case.id}: {took.total_seconds():.1f} s"
    kinds = case.policy_kinds if batch.mode == "policy" else case.runtime_kinds
    found = _on_marked_line(case, batch, kinds)
    assert found, f"{case.id}: no {kinds} item on {case.marked_lines(**batch.values)}: " + json.dumps(
        [(i["kind"], i["location"], i["title"]) for i in _items(view)], indent=1)
    text = json.dumps(view)
    leaked = [t for t in batch.tokens if t in text] + (["/etc/passwd content"] if "root:x:0:0" in text else [])
    assert leaked == []
    assert batch.answered_after[case.id] == 200
    if batch.mode == "policy" and "sim.refused" in case.policy_kinds[:1]:
        correctness = next(c for c in draft["criteria"] if c["criterion_id"] == "kernel_correctness")
        assert correctness["score"] == 1  # not executed because it reaches the system: capped at 1


def test_nothing_outside_the_jobs_changed_and_nothing_was_left_behind(batch: Batch):
    assert batch.unchanged == {"sentinel": True, "numpy": True, "pyproject": True}
    assert batch.leftovers == []
    assert not batch.listening  # the listening socket lived in the sandbox's own network namespace


def test_the_service_still_grades_a_clean_submission(batch: Batch):
    view = batch.clean_view
    assert view and view.get("state") == "done", view
    correctness = next(c for c in view["draft"]["criteria"] if c["criterion_id"] == "kernel_correctness")
    assert correctness["status"] == "scored" and correctness["score"] == 5
    assert not [i for i in _items(view) if i["kind"].startswith("security.") or i["kind"] == "sim.refused"]


def test_a_kernel_that_replaces_np_savez_is_still_compared_with_the_reference(batch: Batch):
    """Issue 11.1: the comparison happens in the grader; patching the child's savers changes nothing."""
    if batch.mode == "policy":
        pytest.skip("with the import policy the patching kernel is not run at all (tested above)")
    outputs = [i for i in _items(batch.views["patch_np_savez"]) if i["kind"] == "sim.output"]
    assert outputs and outputs[0]["metrics"]["matches"] == 0.0  # its output is 1 % off, and the draft says so
    assert 0.005 < outputs[0]["metrics"]["rel_l2"] < 0.02
