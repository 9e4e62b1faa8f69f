"""Children read compiled bytecode of the simulator instead of compiling it again (evidence.sandbox.bytecode)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from evidence.sandbox import bwrap, bytecode, launcher
from evidence.sandbox.bwrap import sandbox_status
from evidence.sandbox.config import SandboxConfig

# The module files compiled while importing what a child imports (importlib compiles a source through
# `compile` with the file's path, which raises the audit event; exec'd snippets have no .py name).
PROBE = """
import json, sys
compiled = []
sys.addaudithook(lambda event, args: compiled.append(args[1]) if event == "compile" and str(args[1]).endswith(".py")
                 else None)
import importlib.util
import evidence.sandbox.child, evidence.nki.runner
sim = sys.modules["evidence.nki.dispatch"]
print(json.dumps({"prefix": sys.pycache_prefix, "compiled": compiled,
                  "cached": bool(sys.pycache_prefix) and __import__("os").path.exists(
                      importlib.util.cache_from_source(sim.__file__))}))
"""


def _run_sandboxed(env: dict[str, str], tmp_path) -> dict:
    status = sandbox_status(SandboxConfig())
    if not status.available:
        pytest.fail(f"the sandbox is unavailable here: {status.detail}; {status.fix}")
    (tmp_path / "out").mkdir()
    cmd = bwrap.command(status.bwrap, SandboxConfig(), tmp_path, env, [sys.executable, "-s", "-B", "-c", PROBE])
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_a_sandboxed_child_imports_the_simulator_without_compiling_it(tmp_path):
    home = str(bwrap.PACKAGE_HOME)
    env = launcher.child_env(home, "probe", bytecode.child_pycache(home))
    seen = _run_sandboxed(env, tmp_path)
    assert seen["prefix"] and seen["cached"], seen
    assert seen["compiled"] == [], seen


def test_the_bytecode_folder_is_refused_when_others_can_write_it(tmp_path, monkeypatch):
    folder = tmp_path / "pyc"
    folder.mkdir(mode=0o700)
    assert bytecode._safe_folder(folder)
    os.chmod(folder, 0o777)
    assert not bytecode._safe_folder(folder)
    link = tmp_path / "link"
    link.symlink_to(folder)
    os.chmod(folder, 0o700)
    assert not bytecode._safe_folder(link)
