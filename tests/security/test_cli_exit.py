"""`grader evaluate` on the most disruptive cases, as separate processes: exit 0 with a complete draft."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.security.cases import CASES
from tests.security.conftest import MANIFEST, TIMEOUT_S

pytestmark = pytest.mark.slow
DISRUPTIVE = ("fork_bomb", "kill_everything", "fd_flood_1_gb", "signal_handlers_then_spin", "os_underscore_exit")


def _write(case, root: Path, values: dict) -> Path:
    folder = root / case.id
    folder.mkdir()
    (folder / "submission.toml").write_text(MANIFEST.format(id=case.id))
    for name, text in case.files(**values).items():
        (folder / name).write_text(text)
    return folder


def test_the_cli_completes_every_disruptive_case_with_exit_0(tmp_path):
    sentinel = tmp_path / "sentinel"
    sentinel.mkdir()
    values = {"sentinel": str(sentinel), "secret_file": str(sentinel / "secret.txt"), "repo": "/nonexistent",
              "grader_pid": str(os.getpid()), "port": "47614", "payload_hex": ""}
    env = {**os.environ, "GRADER_IMPORT_POLICY": "off", "GRADER_SIM_TIMEOUT_S": str(TIMEOUT_S),
           "GRADER_SIM_REFERENCE_TIMEOUT_S": str(TIMEOUT_S), "GRADER_DATA_DIR": str(tmp_path / "data")}
    folders = [_write(c, tmp_path, values) for c in CASES if c.id in DISRUPTIVE]

    def run(folder: Path):
        start = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "grader.cli", "evaluate", str(folder), "--format", "json"],
                              capture_output=True, text=True, env=env, timeout=300)
        return folder.name, done, time.monotonic() - start

    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(run, folders))
    assert len(results) == len(DISRUPTIVE)
    for name, done, took in results:
        assert done.returncode == 0, f"{name}: {done.stderr[-2000:]}"
        draft = json.loads(done.stdout)
        assert len(draft["criteria"]) == 10 and draft["record"]["sandbox"]["import_policy"] == "off", name
        assert took < 120, f"{name}: {took:.1f} s"
    assert list(sentinel.iterdir()) == []
