"""The model path stays lazy and callable from anywhere: no litellm at import, sync draft inside a loop."""

from __future__ import annotations

import asyncio
import subprocess
import sys

from grader.drafting.llm import LLMDrafter
from tests.fakes import llm_case as case
from tests.fakes.llm_case import good_reply


def test_importing_the_drafter_does_not_import_litellm_or_instructor() -> None:
    code = ("import sys, grader.drafting, grader.drafting.llm, grader.prompting; "
            "print('litellm' in sys.modules, 'instructor' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_sync_draft_works_from_inside_a_running_event_loop(server, make_settings) -> None:
    server.default = good_reply
    drafter = LLMDrafter(make_settings())

    async def handler():  # e.g. an async web handler that forgot to move blocking work off the loop
        return drafter.draft(case.submission(), case.bundle(), case.one_criterion("tiling"))

    draft = asyncio.run(handler())
    assert draft.criterion("tiling").score == 3
