"""Fixtures for the model path: one loopback fake OpenAI server per module, settings with short waits."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from grader.settings import Settings
from tests.fakes import llm_case as case
from tests.fakes.openai_server import FakeOpenAIServer, Reply, verdict


class FastSettings(Settings):
    """Settings plus the retry/pricing knobs the drafter reads, tuned so fault tests take milliseconds."""

    retry_attempts: int = 3
    retry_backoff_s: float = 0.01
    retry_backoff_max_s: float = 0.05
    retry_deadline_s: float = 10.0
    max_reasks: int = 2
    max_prompt_tokens: int = 6000
    llm_mode: str = "tools"
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def _fresh(server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.reset()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-for-loopback")


@pytest.fixture
def make_settings(server: FakeOpenAIServer, tmp_path: Path) -> Any:
    def build(**overrides: Any) -> FastSettings:
        base = dict(model="openai/fake-judge", api_base=server.base_url, timeout_s=2.0, max_concurrency=4,
                    cache_dir=tmp_path / "cache", use_cache=False)
        base.update(overrides)
        return FastSettings(**base)

    return build


_CRITERION = re.compile(r"^Criterion id: (\S+)$", re.M)


def criterion_of(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        m = _CRITERION.search(str(message.get("content") or ""))
        if m:
            return m.group(1)
    return "?"


def good_reply(body: dict[str, Any]) -> Reply:
    """A valid verdict for whichever criterion of the test case the request asks about."""
    crit = criterion_of(body)
    if crit == "kernel_correctness":
        return verdict(2, case.SIM_ID, rationale="sim.output:out mismatches on the last 44 rows.")
    return verdict(3, case.RAGGED_ID, rationale="Tiles of 128 rows, no mask for the ragged tail.",
                   file="kernel.py", start_line=10, end_line=10,
                   quote="for i in nl.affine_range(a.shape[0] // 128):")
