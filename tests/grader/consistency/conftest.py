"""The fixture set: five small items with hand-written gold (tests only; the real set is evals/).

Three items are the README's examples unchanged (assembled from `examples/` rather than copied
into the repository); two are variants written for these tests. Gold lives in fixtures/mini-set.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES

FIXTURE = Path(__file__).parent / "fixtures" / "mini-set"
FROM_EXAMPLES = {"matmul-hoisted": "matmul-tiled", "rmsnorm-port": "rmsnorm-cuda-port", "softmax-ragged": "softmax-ragged-defect"}


@cache
def mini_set() -> Path:
    """The assembled set in a per-process temporary folder named mini-set."""
    root = Path(tempfile.mkdtemp(prefix="calib-")) / "mini-set"
    atexit.register(shutil.rmtree, root.parent, ignore_errors=True)
    shutil.copytree(FIXTURE, root)
    for item, example in FROM_EXAMPLES.items():
        shutil.copytree(EXAMPLES / example, root / item, dirs_exist_ok=True)
    return root


@pytest.fixture
def mini_copy(tmp_path: Path) -> Path:
    """A writable copy of the fixture set, for tests that break it on purpose."""
    dest = tmp_path / "set"
    shutil.copytree(mini_set(), dest)
    return dest
