"""The per-draft memo: derived once per parsed draft object, never shared between distinct drafts."""

from __future__ import annotations

from grader.draft import Draft
from grader.service.evaluations import parsed_draft
from grader.web.per_draft import PerDraft


def draft(task: str = "t") -> Draft:
    return Draft.model_validate({
        "task_id": task, "submission_hash": "s", "rubric": {"id": "nki-kernel-review", "version": "1", "hash": "h"},
        "drafter": {"name": "rules", "version": "1"}, "criteria": [], "evidence": {"submission_hash": "s"}})


def test_values_are_made_once_per_draft_object_and_key():
    memo, calls = PerDraft(size=4), []

    def make(tag: str):  # type: ignore[no-untyped-def]
        return lambda: calls.append(tag) or f"{tag}-{len(calls)}"

    a = draft()
    assert memo.get(a, "k", make("a")) == memo.get(a, "k", make("a")) == "a-1"
    assert memo.get(a, "other", make("a2")) == "a2-2"
    # An equal draft parsed separately is another object: computed again, never confused with the first.
    assert memo.get(draft(), "k", make("b")) == "b-3"
    assert calls == ["a", "a2", "b"]


def test_the_memo_is_bounded_and_evicts_the_least_recently_used():
    memo, calls = PerDraft(size=2), []
    a, b, c = draft("a"), draft("b"), draft("c")
    for d in (a, b, a, c):  # c evicts b, the least recently used
        memo.get(d, "k", lambda d=d: calls.append(d.task_id))
    memo.get(a, "k", lambda: calls.append("a again"))
    memo.get(b, "k", lambda: calls.append("b again"))
    assert calls == ["a", "b", "c", "b again"]


def test_a_stored_draft_is_parsed_once_per_content():
    text = draft("stored").model_dump_json()
    copy = (text + " ")[:-1]  # the same content in another string, as a second read of the row gives
    assert copy is not text and parsed_draft(copy) is parsed_draft(text)
    assert parsed_draft(draft("other").model_dump_json()) is not parsed_draft(text)
