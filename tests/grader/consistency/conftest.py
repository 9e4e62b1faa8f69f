from __future__ import annotations

import shutil
from pathlib import Path

import pytest

MINI_SET = Path(__file__).parent / "fixtures" / "mini-set"


@pytest.fixture
def mini_copy(tmp_path: Path) -> Path:
    """A writable copy of the fixture set, for tests that break it on purpose."""
    dest = tmp_path / "set"
    shutil.copytree(MINI_SET, dest)
    return dest
