"""k samples with a median reducer, instability flags, bounded concurrency, and the sample cache."""

from __future__ import annotations

import time

from grader.drafting.cache import SampleCache, cache_key
from grader.drafting.llm import LLMDrafter
from grader.drafting.llm_schema import verdict_model
from grader.settings import Settings
from grader.drafting.retry import RetryPolicy, is_transient
from grader.drafting.sampling import SampleResult, reduce_samples, to_citations
from tests.fakes import llm_case as case
from tests.fakes.openai_server import Reply, verdict
from tests.fakes.llm_case import good_reply

Model = verdict_model("kernel_correctness", (1, 2, 3, 4, 5))


def _v(score, conf=0.8, eid=case.SIM_ID):
    return Model.model_validate({"score": score, "rationale": f"r{score}", "citations": [{"evidence_id": eid}], "confidence": conf})


def _reduce(*scores):
    results = [SampleResult(i, _v(s) if s is not None else None, reason=None if s is not None else "boom")
               for i, s in enumerate(scores)]
    return reduce_samples("kernel_correctness", results, lambda v: to_citations(v, {}))


def test_median_of_ordinal_samples_and_dispersion() -> None:
    d = _reduce(2, 3, 2)
    assert d.score == 2 and d.samples == (2, 3, 2) and d.dispersion == 1.0
    assert not any(f.code == "unstable_samples" for f in d.flags)
    d = _reduce(1, 4, 2)
    assert d.score == 2 and d.dispersion == 3.0 and d.rationale == "r2"
    assert any(f.code == "unstable_samples" for f in d.flags)
    d = _reduce(2, 4)
    assert d.score == 2  # lower median for an even count: ordinal, never a mean of 3


def test_failed_samples_are_kept_and_all_failed_is_unscored() -> None:
    d = _reduce(3, None, 3)
    assert d.score == 3 and d.samples == (3, None, 3) and any(f.code == "partial_samples" for f in d.flags)
    d = _reduce(None, None)
    assert d.status == "unscored" and d.score is None and "boom" in d.reason


def test_k_samples_use_distinct_pinned_seeds_and_disagreement_is_flagged(server, make_settings) -> None:
    scores = iter([2, 5, 2])
    server.default = lambda body: verdict(next(scores), case.SIM_ID)
    draft = LLMDrafter(make_settings(samples=3, temperature=0.7, max_concurrency=1)).draft(
        case.submission(), case.bundle(), case.one_criterion("kernel_correctness"))
    crit = draft.criterion("kernel_correctness")
    assert crit.score == 2 and sorted(crit.samples) == [2, 2, 5] and crit.dispersion == 3.0
    assert "unstable_samples" in {f.code for f in crit.flags}
    seeds = sorted(r["body"]["seed"] for r in server.requests)
    assert seeds == [7, 8, 9] and all(r["body"]["temperature"] == 0.7 for r in server.requests)
    assert {c["sample"] for c in draft.record.calls} == {0, 1, 2}


def test_concurrency_is_bounded_and_used(server, make_settings) -> None:
    def slow(body):
        reply = good_reply(body)
        reply.delay_s = 0.15
        return reply

    server.default = slow
    t0 = time.monotonic()
    LLMDrafter(make_settings(samples=3, max_concurrency=1)).draft(case.submission(), case.bundle(), case.rubric())
    serial = time.monotonic() - t0
    assert server.max_in_flight == 1
    server.requests.clear()
    server.max_in_flight = 0
    settings = make_settings(samples=3, max_concurrency=3)
    t0 = time.monotonic()
    draft = LLMDrafter(settings).draft(case.submission(), case.bundle(), case.rubric())
    elapsed = time.monotonic() - t0
    assert len(server.requests) == 6  # 2 model-drafted criteria x 3 samples
    assert server.max_in_flight == 3  # reached by slow start (1, 2, 3 in flight), never more
    assert elapsed < serial  # faster than the same draft one request at a time
    assert draft.criterion("kernel_correctness").score == 2 and draft.criterion("tiling").score == 3
    assert draft.criterion("benchmarking").status == "not_applicable"
    assert draft.criterion("precision").status == "unscored" and draft.criterion("precision").reason == "insufficient evidence"


def test_rerun_with_cache_is_free_and_identical(server, make_settings) -> None:
    server.default = good_reply
    settings = make_settings(use_cache=True, samples=2)
    first = LLMDrafter(settings).draft(case.submission(), case.bundle(), case.rubric())
    n = len(server.requests)
    assert n == 4
    second = LLMDrafter(settings).draft(case.submission(), case.bundle(), case.rubric())
    assert len(server.requests) == n  # no new request
    assert second.criteria == first.criteria
    assert second.record.usage["cached_samples"] == 4 and second.record.cost_usd == 0.0
    assert all(c["cached"] for c in second.record.calls) and len(second.record.calls) == len(first.record.calls)
    third = LLMDrafter(make_settings(use_cache=False, samples=2)).draft(case.submission(), case.bundle(), case.rubric())
    assert len(server.requests) == 2 * n and third.criteria == first.criteria


def test_failures_are_not_cached(server, make_settings) -> None:
    server.script(*[Reply(status=503)] * 3)
    settings = make_settings(use_cache=True)
    bad = LLMDrafter(settings).draft(case.submission(), case.bundle(), case.one_criterion("kernel_correctness"))
    assert bad.criterion("kernel_correctness").status == "unscored"
    server.default = good_reply
    good = LLMDrafter(settings).draft(case.submission(), case.bundle(), case.one_criterion("kernel_correctness"))
    assert good.criterion("kernel_correctness").score == 2


def test_cache_key_covers_model_messages_params_and_sample(tmp_path) -> None:
    base = dict(model="m", messages_hash="sha256:a", params={"temperature": 0, "seed": 7}, sample=0)
    key = cache_key(**base)
    assert key == cache_key(**base)
    for change in ({"model": "n"}, {"messages_hash": "sha256:b"}, {"params": {"temperature": 0, "seed": 8}}, {"sample": 1}):
        assert cache_key(**{**base, **change}) != key
    cache = SampleCache(tmp_path)
    cache.put(key, {"x": 1})
    assert cache.get(key) == {"x": 1}
    assert SampleCache(tmp_path, enabled=False).get(key) is None


def test_retry_policy_classification_and_settings() -> None:
    class Status(Exception):
        def __init__(self, code):
            self.status_code = code

    assert is_transient(Status(429)) and is_transient(Status(503)) and is_transient(TimeoutError())
    assert not is_transient(Status(400)) and not is_transient(Status(401)) and not is_transient(ValueError())

    p = RetryPolicy.from_settings(Settings(timeout_s=5.0, retry_attempts=6, max_reasks=1))
    assert (p.transport_attempts, p.reasks, p.timeout_s, p.deadline_s) == (6, 1, 5.0, 120.0)
