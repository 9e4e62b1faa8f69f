"""A local model server with one slot and a fixed time per request: drafting adapts and completes.

The fake server processes one request at a time and queues the rest, as llama.cpp's server with one
slot does; requests the client gave up on still hold the slot until done (a server that does not
cancel). Times are scaled down (0.4 s per request, a 2 s timeout) from the ~30 s per prompt and the
60-120 s timeout of the real case.
"""

from __future__ import annotations

import time

import pytest

from grader.drafting.llm import LLMDrafter
from grader.rubric import Rubric
from tests.fakes import llm_case as case
from tests.fakes.openai_server import FakeOpenAIServer

pytestmark = pytest.mark.slow
CRITERIA = 8


def many_criteria() -> Rubric:
    tiling = case.rubric().criterion("tiling")
    crits = [tiling.model_copy(update={"id": f"aspect_{n}", "title": f"Aspect {n}"}) for n in range(CRITERIA)]
    return case.rubric().model_copy(update={"criteria": tuple(crits)})


def reply_for_any(body):  # every criterion of many_criteria() cites the same evidence as "tiling"
    return case.good_reply({"messages": [{"content": "Criterion id: tiling"}]})


@pytest.fixture
def one_slot():
    with FakeOpenAIServer(default=reply_for_any, slots=1, delay_s=0.4) as srv:
        yield srv


def test_draft_completes_against_a_one_slot_server(one_slot, make_settings):
    settings = make_settings(api_base=one_slot.base_url, timeout_s=2.0, max_concurrency=8,
                             retry_deadline_s=2.5, llm_queue_delay_s=0.2)
    started = time.monotonic()
    draft = LLMDrafter(settings).draft(case.submission(), case.bundle(), many_criteria())
    elapsed = time.monotonic() - started
    assert [c.status for c in draft.criteria] == ["scored"] * CRITERIA, [c.reason for c in draft.criteria]
    usage = draft.record.usage
    # It backed off to what the server sustains. Slow start overshoots by a step or two before the
    # first queued reply comes back (more on a loaded machine, where client overhead blurs latencies);
    # a fixed bound would have queued all eight at once and timed most of them out.
    assert one_slot.max_in_flight <= 4 and usage["concurrency_limit"] <= 2
    assert usage["concurrency_queued"] + usage["concurrency_timeouts"] >= 1
    # Waiting for a client-side slot is not time against the 2.5 s deadline: the draft took longer
    # than that (eight requests of 0.4 s one after another) and no criterion ran out of time.
    assert elapsed > CRITERIA * 0.4 and draft.record.slow_criteria == ()


def test_criteria_left_unscored_because_the_model_is_too_slow_are_named(make_settings):
    with FakeOpenAIServer(default=reply_for_any, slots=1, delay_s=0.5) as slow:
        settings = make_settings(api_base=slow.base_url, timeout_s=0.2, retry_attempts=2, retry_deadline_s=1.0)
        draft = LLMDrafter(settings).draft(case.submission(), case.bundle(), case.one_criterion("tiling"))
    (crit,) = draft.criteria
    assert crit.status == "unscored" and "model too slow" in crit.reason
    assert "GRADER_TIMEOUT_S" in crit.reason
    assert draft.record.slow_criteria == ("tiling",)
    assert any(f.code == "model_too_slow" for f in crit.flags)
