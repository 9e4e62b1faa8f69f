"""Shared fixtures: paths to the examples and helpers to build submissions in tmp folders."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "submission.toml").is_file())


def pytest_collection_modifyitems(config, items):
    """Test files holding `slow` tests run first, the longest (`pytest.mark.slow(minutes=N)`) before the others,
    order otherwise kept: with one file to a test process (pytest-xdist's loadfile), a multi-minute file started
    last would leave the other process idle at the end."""
    minutes: dict = {}
    for item in items:
        mark = item.get_closest_marker("slow")
        if mark is not None:
            minutes[item.path] = max(minutes.get(item.path, 0), mark.kwargs.get("minutes", 0))
    items.sort(key=lambda item: (item.path not in minutes, -minutes.get(item.path, 0)))


@pytest.fixture(autouse=True, scope="session")
def _private_data_dir(tmp_path_factory):
    """Calibration runs and audits go to a throw-away data directory, never the user's, and so do the
    caches (model replies, evidence bundles): shared by the tests of one session, gone after it. Evidence
    bundles are shared by both test processes too (an example one gathered is not gathered again by the
    other; entries are written whole, by rename); model replies stay per process, since tests count a fake
    model's requests."""
    cache = tmp_path_factory.mktemp("grader-cache")
    session = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        session = session.parent  # the session's folder, above each process's own
    (session / "evidence-cache").mkdir(exist_ok=True)
    (cache / "evidence").symlink_to(session / "evidence-cache", target_is_directory=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADER_DATA_DIR", str(tmp_path_factory.mktemp("grader-data")))
        mp.setenv("GRADER_CACHE_DIR", str(cache))
        yield


@pytest.fixture(autouse=True, scope="session")
def _no_silent_exit():
    """Code under test must never end the test run: `os._exit` in the pytest process ends it with the
    status given, skipping the summary (a stopped in-thread Worker once ended a failing run with 0, which
    CI read as a pass). Forked children keep the real `os._exit`."""
    real, pid = os._exit, os.getpid()

    def guarded(code: int) -> None:
        if os.getpid() != pid:
            real(code)
        raise RuntimeError(f"os._exit({code}) called in the test process")

    os._exit = guarded
    yield
    os._exit = real


@pytest.fixture
def example_copy(tmp_path: Path):
    """Copy an example into tmp_path so a test can break it without touching the repo."""

    def copy(name: str) -> Path:
        dst = tmp_path / name
        shutil.copytree(EXAMPLES / name, dst)
        return dst

    return copy
