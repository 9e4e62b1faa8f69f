"""Configuration errors are one line naming the variable and what it accepts; enums; the cache directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from platformdirs import user_cache_dir
from typer.testing import CliRunner

from grader.cli import app
from grader.settings import ConfigError, DrafterChoice, LLMMode, Settings
from tests.conftest import EXAMPLES, ROOT

runner = CliRunner()


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("GRADER_SAMPLES", "abc", "GRADER_SAMPLES='abc' is not accepted: expected an integer from 1 to 16"),
    ("GRADER_SAMPLES", "40", "expected an integer from 1 to 16"),
    ("GRADER_DRAFTER", "gpt", "GRADER_DRAFTER='gpt' is not accepted: expected one of auto, rules, llm"),
    ("GRADER_LLM_MODE", "xml", "expected one of tools, json, md_json"),
    ("GRADER_USE_CACHE", "maybe", "expected true or false"),
    ("GRADER_SIM_TIMEOUT_S", "-5", "GRADER_SIM_TIMEOUT_S='-5' is not accepted: expected a number > 0"),
])
def test_bad_setting_is_one_line_exit_2(monkeypatch, variable, value, expected):
    monkeypatch.setenv(variable, value)
    result = runner.invoke(app, ["evaluate", str(EXAMPLES / "matmul-tiled")])
    assert result.exit_code == 2
    assert expected in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.output


def test_bad_setting_in_a_real_process_has_no_traceback():
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}, "GRADER_SAMPLES": "abc"}
    for args in (["rubric", "list"], ["serve", "--port", "1"], ["--version"]):
        proc = subprocess.run([sys.executable, "-m", "grader.cli", *args], capture_output=True, text=True,
                              cwd=ROOT, env=env, timeout=120)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "GRADER_SAMPLES='abc'" in proc.stderr and "Traceback" not in proc.stderr, args


def test_drafter_and_llm_mode_are_enums():
    s = Settings(drafter="llm", llm_mode="md_json", model="openai/x")
    assert s.drafter is DrafterChoice.llm and s.llm_mode is LLMMode.md_json
    assert Settings(model="openai/x").resolved_drafter() == "llm" and Settings().resolved_drafter() == "rules"
    with pytest.raises(ConfigError, match="GRADER_DRAFTER='robot'"):
        Settings.load(drafter="robot")


def test_cache_dir_defaults_to_the_user_cache_dir_not_the_working_directory(monkeypatch):
    monkeypatch.delenv("GRADER_CACHE_DIR", raising=False)
    cache = Settings().cache_dir
    assert cache.is_absolute() and cache == Path(user_cache_dir("nki-grader"))


def test_a_default_spending_limit_applies_per_evaluation(monkeypatch):
    monkeypatch.delenv("GRADER_BUDGET_USD", raising=False)
    assert Settings().budget_usd == 2.0
    assert Settings(model="openai/a", allowed_models="openai/b, openai/c").model_allow_list() == [
        "openai/a", "openai/b", "openai/c"]
