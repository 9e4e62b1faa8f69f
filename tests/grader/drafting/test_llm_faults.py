"""Every scripted fault of the model path ends as specified, against a real loopback HTTP server.

litellm and instructor run for real (api_base -> the fake server). Each test checks the outcome
(re-ask then success, retry then success, or unscored with a reason), that no score is invented,
and that every HTTP request the server saw is in the draft record.
"""

from __future__ import annotations

import json

import pytest

from grader.draft import Draft
from grader.drafting.llm import LLMDrafter
from grader.errors import ModelProviderError
from tests.fakes import llm_case as case
from tests.fakes.openai_server import FakeOpenAIServer, Reply, tool_reply, verdict

QUOTE = "for i in nl.affine_range(a.shape[0] // 128):"


def _draft(settings, criterion: str = "kernel_correctness") -> Draft:
    return LLMDrafter(settings).draft(case.submission(), case.bundle(), case.one_criterion(criterion))


def _all_recorded(draft: Draft, server: FakeOpenAIServer) -> None:
    """Nothing lost: one call record per request the server received, in order per sample."""
    assert len(draft.record.calls) == len(server.requests)
    assert [c["call"] for c in draft.record.calls] == list(range(1, len(draft.record.calls) + 1))


def _citations_resolve(draft: Draft) -> None:
    bundle, files = draft.evidence, case.submission().files
    for crit in draft.criteria:
        for cite in crit.citations:
            assert bundle.get(cite.evidence_id) is not None
            if cite.file is not None:
                lines = files[cite.file].splitlines()
                assert 1 <= cite.start_line <= cite.end_line <= len(lines)
                if cite.quote:
                    assert cite.quote in "\n".join(lines[cite.start_line - 1:cite.end_line])


def test_valid_reply_is_scored_with_resolving_citations(server, make_settings) -> None:
    server.script(verdict(2, case.RAGGED_ID, rationale="Mismatch on the ragged tail.", quote=QUOTE))
    draft = _draft(make_settings())
    crit = draft.criterion("kernel_correctness")
    assert crit.status == "scored" and crit.score == 2 and crit.samples == (2,)
    # the model gave no lines: the citation is completed from the evidence item's location
    assert crit.citations[0].file == "kernel.py" and crit.citations[0].start_line == 10
    _citations_resolve(draft)
    _all_recorded(draft, server)
    call = draft.record.calls[0]
    assert call["raw"]["tool_calls"][0]["name"].startswith("Verdict_kernel_correctness")
    assert call["raw"]["system_fingerprint"] == "fp_fake_1" and call["usage"]["prompt_tokens"] == 120
    assert draft.drafter.params["fingerprints"] == ["fp_fake_1"]
    assert {"system.j2", "criterion.j2", "output_contract.j2", "messages:kernel_correctness"} <= set(draft.record.prompt_hashes)
    body = server.requests[0]["body"]
    assert body["temperature"] == 0.0 and body["seed"] == 7 and body["tools"]


def test_malformed_json_is_reasked_then_succeeds(server, make_settings) -> None:
    server.script(Reply(tool_args='{"score": 2, "rationale": "unterminated'), verdict(2, case.SIM_ID))
    draft = _draft(make_settings())
    assert draft.criterion("kernel_correctness").score == 2
    assert len(server.requests) == 2
    second = server.requests[1]["body"]["messages"]
    assert len(second) > len(server.requests[0]["body"]["messages"])  # the re-ask carries the error
    assert draft.record.calls[1]["reask_feedback"] and "json" in draft.record.calls[1]["reask_feedback"].lower()
    _all_recorded(draft, server)


def test_malformed_json_every_time_is_unscored_and_keeps_the_last_raw_reply(server, make_settings) -> None:
    bad = '{"score": 5, "rationale": "trust me"'
    server.script(*[Reply(tool_args=bad)] * 3)
    draft = _draft(make_settings(max_reasks=2))
    crit = draft.criterion("kernel_correctness")
    assert crit.status == "unscored" and crit.score is None
    assert "3 attempt" in crit.reason and ("parse" in crit.reason or "validation" in crit.reason)
    assert crit.samples == (None,)
    assert len(server.requests) == 3
    assert draft.record.calls[-1]["raw"]["tool_calls"][0]["arguments"] == bad
    _all_recorded(draft, server)


def test_citation_of_unknown_id_is_reasked(server, make_settings) -> None:
    server.script(verdict(2, "sim.output:made-up"), verdict(2, case.SIM_ID))
    draft = _draft(make_settings())
    assert draft.criterion("kernel_correctness").score == 2
    feedback = draft.record.calls[1]["reask_feedback"]
    assert "sim.output:made-up" in feedback and "does not exist" in feedback
    _citations_resolve(draft)
    _all_recorded(draft, server)


def test_citation_of_evidence_outside_the_criterion_is_reasked(server, make_settings) -> None:
    # tiling may cite nki.* evidence, not the simulator's output
    server.script(verdict(3, case.SIM_ID), verdict(3, case.KERNEL_ID))
    draft = _draft(make_settings(), "tiling")
    assert draft.criterion("tiling").score == 3
    assert "not evidence for tiling" in draft.record.calls[1]["reask_feedback"]


def test_wrong_quote_is_reasked_then_unscored_if_never_fixed(server, make_settings) -> None:
    wrong = verdict(2, case.RAGGED_ID, quote="for i in nl.sequential_range(4):", file="kernel.py", start_line=10, end_line=10)
    server.script(wrong, verdict(2, case.RAGGED_ID, quote=QUOTE, file="kernel.py", start_line=10, end_line=10))
    draft = _draft(make_settings())
    assert draft.criterion("kernel_correctness").score == 2
    assert "does not occur in kernel.py lines 10-10" in draft.record.calls[1]["reask_feedback"]
    _citations_resolve(draft)

    server.reset()
    server.script(*[wrong] * 3)
    draft = _draft(make_settings())
    crit = draft.criterion("kernel_correctness")
    assert crit.status == "unscored" and "does not occur" in crit.reason
    _all_recorded(draft, server)


def test_lines_beyond_the_file_and_scores_off_the_scale_are_reasked(server, make_settings) -> None:
    server.script(verdict(2, case.RAGGED_ID, file="kernel.py", start_line=90, end_line=95),
                  verdict(7, case.SIM_ID), verdict(2, case.SIM_ID))
    draft = _draft(make_settings())
    assert draft.criterion("kernel_correctness").score == 2
    assert "do not exist in kernel.py" in draft.record.calls[1]["reask_feedback"]
    assert "score" in draft.record.calls[2]["reask_feedback"]
    _all_recorded(draft, server)


def test_reply_without_tool_call_is_reasked(server, make_settings) -> None:
    server.script(Reply(content="I think this deserves a 4."), verdict(2, case.SIM_ID))
    draft = _draft(make_settings())
    assert draft.criterion("kernel_correctness").score == 2
    assert len(server.requests) == 2


def test_rate_limit_is_retried_without_a_reask(server, make_settings) -> None:
    server.script(Reply(status=429, error="rate limited", headers={"Retry-After": "0"}), verdict(2, case.SIM_ID))
    draft = _draft(make_settings())
    assert draft.criterion("kernel_correctness").score == 2
    first, second = draft.record.calls
    assert first["error"]["status_code"] == 429 and first["error"]["transient"] and first["raw"] is None
    assert second["error"] is None and second["reask_feedback"] is None
    assert server.requests[0]["body"]["messages"] == server.requests[1]["body"]["messages"]  # same prompt, not a re-ask
    assert draft.record.usage["failed_calls"] == 1
    _all_recorded(draft, server)


def test_repeated_server_errors_end_unscored_after_the_bounded_attempts(server, make_settings) -> None:
    server.script(*[Reply(status=500, error="boom")] * 10)
    draft = _draft(make_settings(retry_attempts=3))
    crit = draft.criterion("kernel_correctness")
    assert crit.status == "unscored" and crit.score is None
    assert "failed after retries" in crit.reason and "InternalServerError" in crit.reason
    assert len(server.requests) == 3  # neither litellm nor the OpenAI SDK retried on top of us
    assert all(c["error"]["status_code"] == 500 and "boom" in c["error"]["message"] for c in draft.record.calls)
    _all_recorded(draft, server)


def test_client_error_is_not_retried_and_stops_the_draft(server, make_settings) -> None:
    server.script(Reply(status=400, error="bad request: unknown parameter"), verdict(2, case.SIM_ID))
    with pytest.raises(ModelProviderError, match=r"rejected the request \(BadRequestError 400\).*unknown parameter"):
        _draft(make_settings())
    assert len(server.requests) == 1


def test_slow_reply_times_out_and_is_retried(server, make_settings) -> None:
    server.script(Reply(delay_s=3.0, tool_args={"score": 2}), verdict(2, case.SIM_ID))
    draft = _draft(make_settings(timeout_s=0.3))
    assert draft.criterion("kernel_correctness").score == 2
    assert draft.record.calls[0]["error"]["type"] == "Timeout"
    _all_recorded(draft, server)


def test_replies_always_slower_than_the_timeout_end_unscored(server, make_settings) -> None:
    server.script(*[Reply(delay_s=3.0, tool_args={"score": 5})] * 2)
    draft = _draft(make_settings(timeout_s=0.2, retry_attempts=2))
    crit = draft.criterion("kernel_correctness")
    assert crit.status == "unscored" and "Timeout" in crit.reason
    assert len(draft.record.calls) == 2 and all(c["error"]["type"] == "Timeout" for c in draft.record.calls)


def test_json_mode_reads_the_reply_content(server, make_settings) -> None:
    body = {"score": 2, "rationale": "Mismatch.", "citations": [{"evidence_id": case.SIM_ID}], "confidence": 0.7}
    server.script(Reply(content=json.dumps(body)))
    draft = _draft(make_settings(llm_mode="json"))
    assert draft.criterion("kernel_correctness").score == 2
    assert "tools" not in server.requests[0]["body"]


def test_budget_stops_further_calls(server, make_settings) -> None:
    # 120 prompt tokens at $10k per million tokens = $1.20 per call; the budget allows one call
    server.script(verdict(9, case.SIM_ID), verdict(2, case.SIM_ID))
    settings = make_settings(budget_usd=1.0, input_cost_per_mtok=10_000.0, output_cost_per_mtok=0.0)
    draft = _draft(settings)
    crit = draft.criterion("kernel_correctness")
    assert crit.status == "unscored" and "budget" in crit.reason
    assert len(server.requests) == 1
    assert draft.record.cost_usd == 1.2


def test_model_may_judge_not_applicable_but_a_reviewer_confirms(server, make_settings) -> None:
    server.script(tool_reply(score="not_applicable", rationale="No reference to compare with.", citations=[], confidence=0.4))
    crit = _draft(make_settings()).criterion("kernel_correctness")
    assert crit.status == "not_applicable" and crit.score is None
    assert "model_not_applicable" in {f.code for f in crit.flags}


def test_truncated_evidence_is_flagged_and_the_draft_serialises(server, make_settings) -> None:
    server.script(verdict(2, case.SIM_ID))
    draft = _draft(make_settings(max_prompt_tokens=700))
    crit = draft.criterion("kernel_correctness")
    assert crit.score == 2 and "evidence_truncated" in {f.code for f in crit.flags}
    assert "Left out to fit the token budget" in server.requests[0]["body"]["messages"][1]["content"]
    again = Draft.model_validate_json(draft.model_dump_json())
    assert again.criteria == draft.criteria and again.record.calls == draft.record.calls
