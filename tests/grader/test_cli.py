"""The CLI through typer's runner and as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from grader.cli import app
from tests.conftest import EXAMPLE_NAMES, EXAMPLES, ROOT

runner = CliRunner()


def test_evaluate_json_is_a_complete_draft():
    result = runner.invoke(app, ["evaluate", str(EXAMPLES / "matmul-tiled"), "--format", "json"])
    assert result.exit_code == 0, result.output
    draft = json.loads(result.stdout)
    assert [c["criterion_id"] for c in draft["criteria"]][:2] == ["kernel_correctness", "migration_fidelity"]
    assert len(draft["criteria"]) == 10
    assert draft["drafter"]["name"] == "rules"
    assert draft["rubric"]["hash"].startswith("sha256:")


def test_standalone_nki_submission_gets_a_complete_draft():
    """examples/rmsnorm-nki is written in the standalone nki 0.3+ dialect (dst-first ISA, access patterns,
    a helper module named in kernel.modules): correctness, numerics and the trace-based criteria are scored
    from the simulation, like a beta-dialect submission's."""
    result = runner.invoke(app, ["evaluate", str(EXAMPLES / "rmsnorm-nki"), "--format", "json"])
    assert result.exit_code == 0, result.output
    draft = json.loads(result.stdout)
    scores = {c["criterion_id"]: c["score"] for c in draft["criteria"]}
    for criterion in ("kernel_correctness", "numerical_correctness", "tiling", "memory_hierarchy", "data_movement",
                      "performance", "precision", "neuron_platform"):
        assert scores[criterion] is not None, criterion
    assert scores["kernel_correctness"] == 5
    items = draft["evidence"]["items"]
    kinds = {i["kind"] for i in items}
    assert {"sim.output", "sim.trace", "nki.dialect"} <= kinds and "sim.unsupported_dialect" not in kinds
    (dialect,) = [i for i in items if i["kind"] == "nki.dialect"]
    assert dialect["labels"]["dialect"] == "standalone" and dialect["labels"]["version"] == "0.2+"  # no 0.3-only API
    assert {"dst_first", "access_patterns"} <= set(dialect["labels"]["features"].split(","))
    assert not draft["evidence"]["failures"]


def test_evaluate_markdown_shows_scores_rationale_and_cited_locations():
    result = runner.invoke(app, ["evaluate", str(EXAMPLES / "softmax-ragged-defect")])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "# Draft evaluation: softmax-rows" in out
    assert "## Kernel correctness — 2/5" in out  # an output region is never written: level 2
    assert "kernel.py:" in out  # cited evidence with file:line


def test_evaluate_writes_output_file(tmp_path):
    target = tmp_path / "draft.json"
    result = runner.invoke(app, ["evaluate", str(EXAMPLES / "matmul-tiled"), "--format", "json", "-o", str(target)])
    assert result.exit_code == 0
    assert json.loads(target.read_text())["task_id"] == "matmul-tiled-bf16"


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        ("manifest", "submission.toml: invalid TOML"),
        ("kernel", "submission.toml: kernel.file: file 'kernel.py' not found"),
        ("syntax", "kernel.py:1: Python syntax error"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(example_copy, breakage, message):
    root = example_copy("matmul-tiled")
    if breakage == "manifest":
        (root / "submission.toml").write_text("[task\n")
    elif breakage == "kernel":
        (root / "kernel.py").unlink()
    else:
        (root / "kernel.py").write_text("def (:\n")
    result = runner.invoke(app, ["evaluate", str(root)])
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_evidence_command_lists_items():
    result = runner.invoke(app, ["evidence", str(EXAMPLES / "matmul-tiled"), "--format", "json"])
    assert result.exit_code == 0, result.output
    bundle = json.loads(result.stdout)
    assert bundle["bundle_hash"].startswith("sha256:") and bundle["items"]


def test_rubric_list_and_show():
    listed = runner.invoke(app, ["rubric", "list"])
    assert listed.exit_code == 0 and "nki-kernel-review" in listed.stdout
    shown = runner.invoke(app, ["rubric", "show", "nki-kernel-review"])
    assert shown.exit_code == 0 and "## kernel_correctness" in shown.stdout and "mismatch-caps-at-2" in shown.stdout
    missing = runner.invoke(app, ["rubric", "show", "nope"])
    assert missing.exit_code == 2 and "unknown rubric 'nope'" in missing.stderr


def test_schema_prints_json_schemas():
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schemas = json.loads(result.stdout)
    assert {"EvidenceItem", "EvidenceBundle", "Rubric", "Draft", "Citation"} <= set(schemas)
    assert "citations" in schemas["CriterionDraft"]["properties"]


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_subprocess_is_deterministic_and_offline(name):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADER_")}
    cmd = [sys.executable, "-m", "grader.cli", "evaluate", str(EXAMPLES / name), "--format", "json"]
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert first.stdout == second.stdout  # byte-identical drafts
