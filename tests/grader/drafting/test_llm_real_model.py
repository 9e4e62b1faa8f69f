"""Opt-in: the LLM drafter against a real model (GRADER_REAL_MODEL_TESTS=1).

Point it at any litellm model with GRADER_MODEL / GRADER_API_BASE (keys through the provider's usual
variables). Offline, DESIGN §6 describes serving Qwen2.5-Coder-0.5B-Instruct with llama-cpp-python's
OpenAI-compatible server (`--chat_format chatml-function-calling`), e.g.
GRADER_MODEL=openai/qwen2.5-coder-0.5b GRADER_API_BASE=http://127.0.0.1:8000/v1 OPENAI_API_KEY=x.
A small model may well fail validation: the test asserts the contract (scored with resolving
citations, or unscored with a reason and the raw replies kept), not a particular score.
"""

from __future__ import annotations

import os

import pytest

from grader.drafting.llm import LLMDrafter
from grader.settings import Settings
from tests.fakes import llm_case as case

pytestmark = [
    pytest.mark.realmodel,
    pytest.mark.skipif(os.environ.get("GRADER_REAL_MODEL_TESTS") != "1", reason="opt-in: set GRADER_REAL_MODEL_TESTS=1"),
]


def test_real_model_draft_honours_the_contract(tmp_path) -> None:
    settings = Settings(
        model=os.environ.get("GRADER_MODEL", "openai/qwen2.5-coder-0.5b"),
        api_base=os.environ.get("GRADER_API_BASE", "http://127.0.0.1:8000/v1"),
        timeout_s=float(os.environ.get("GRADER_TIMEOUT_S", "120")),
        use_cache=False, cache_dir=tmp_path, max_concurrency=1,
    )
    os.environ.setdefault("OPENAI_API_KEY", "sk-local")
    draft = LLMDrafter(settings).draft(case.submission(), case.bundle(), case.one_criterion("kernel_correctness"))
    crit = draft.criterion("kernel_correctness")
    assert draft.record.calls, "no model call was recorded"
    if crit.status == "scored":
        for cite in crit.citations:
            assert draft.evidence.get(cite.evidence_id) is not None
        if crit.score > 2:
            assert "contradicts_evidence" in {f.code for f in crit.flags}
    else:
        assert crit.status in ("unscored", "not_applicable") and crit.reason
        assert any(c.get("raw") or c.get("error") for c in draft.record.calls)
