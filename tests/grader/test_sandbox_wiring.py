"""The grader side of the sandbox: settings, `grader doctor`, the loud opt-out and the draft record."""

from __future__ import annotations

import logging

from typer.testing import CliRunner

from evidence.sandbox.config import SandboxMode
from grader import sandbox
from grader.cli import app
from grader.evaluate import evaluate
from grader.settings import Settings
from tests.conftest import EXAMPLES

runner = CliRunner()


def test_settings_reach_the_simulator_as_a_sandbox_config(monkeypatch):
    monkeypatch.setenv("GRADER_SIM_WORKERS", "3")
    monkeypatch.setenv("GRADER_IMPORT_POLICY", "off")
    monkeypatch.setenv("GRADER_SANDBOX_BWRAP", "/opt/bwrap")
    options = Settings().collector_options()["nki-simulator"]
    config = options["sandbox"]
    assert (config.workers, config.import_policy, config.bwrap, config.mode) == (3, False, "/opt/bwrap", SandboxMode.bwrap)


def test_doctor_says_what_is_wrong_and_how_to_fix_it(monkeypatch):
    monkeypatch.setenv("GRADER_SANDBOX_BWRAP", "/nonexistent/bwrap")
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "sandbox: UNAVAILABLE: bubblewrap not found" in text and "fix: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap" in text
    assert "GRADER_SANDBOX=off" in text
    monkeypatch.delenv("GRADER_SANDBOX_BWRAP")
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 0 and "sandbox: available: namespaces ok" in result.output


def test_doctor_checks_the_cost_model_profile(monkeypatch, tmp_path):
    bad = tmp_path / "lab.toml"
    bad.write_text("[params]\npe_clock_ghz = 0\n")
    monkeypatch.setenv("GRADER_PERF_SPEC", str(bad))
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1 and "cost-model profile: INVALID" in result.output and "pe_clock_ghz" in result.output
    bad.write_text("[params]\npe_clock_ghz = 2.0\n")
    result = runner.invoke(app, ["doctor"])
    from evidence.perf.spec import load_spec

    assert result.exit_code == 0 and f"trn2 table {load_spec('trn2').version}+override" in result.output


def test_the_opt_out_is_logged_loudly_and_recorded_in_every_draft(monkeypatch, caplog):
    monkeypatch.setattr(sandbox, "_announced", False)
    settings = Settings(sandbox="off", sim_timeout_s=30)
    with caplog.at_level(logging.WARNING, logger="grader.sandbox"):
        sandbox.announce(settings)
    assert "GRADER_SANDBOX=off" in caplog.text and "WITHOUT the bubblewrap sandbox" in caplog.text
    draft = evaluate(EXAMPLES / "matmul-tiled", settings=settings)
    assert draft.record.sandbox["mode"] == "off" and draft.record.sandbox["import_policy"] == "on"
    draft = evaluate(EXAMPLES / "matmul-tiled", settings=Settings(sim_timeout_s=30))
    assert draft.record.sandbox["mode"] == "bwrap" and draft.record.sandbox["available"] == "yes"
