"""Fixtures for the model path: one loopback fake OpenAI server per module, settings with short waits."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from grader.settings import Settings
from tests.fakes.openai_server import FakeOpenAIServer


class FastSettings(Settings):
    """Settings with retry waits tuned so fault tests take milliseconds."""

    retry_attempts: int = 3
    retry_backoff_s: float = 0.01
    retry_backoff_max_s: float = 0.05
    retry_deadline_s: float | None = 10.0


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
