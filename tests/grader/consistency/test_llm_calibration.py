"""Calibration of the llm drafter against the loopback fake model server: an oracle model that
answers with gold passes the gates it can, a model wrong on purpose fails them and exits 1."""

from __future__ import annotations

import json
import re
import shutil
import tomllib

import pytest
from typer.testing import CliRunner

from grader.cli import app
from tests.fakes.llm_case import criterion_of
from tests.fakes.openai_server import FakeOpenAIServer, verdict
from tests.grader.consistency.conftest import mini_set
from tests.grader.test_llm_wiring import EVIDENCE_LINE

TASK_ID = re.compile(r"^id: (\S+)$", re.M)


def _gold() -> dict[tuple[str, str], object]:
    """(task id, criterion) -> gold score, from the fixture set."""
    out = {}
    for item in sorted(p for p in mini_set().iterdir() if (p / "gold.toml").is_file()):
        task = tomllib.loads((item / "submission.toml").read_text())["task"]["id"]
        for cid, label in tomllib.loads((item / "gold.toml").read_text())["criteria"].items():
            out[(task, cid)] = label["score"]
    return out


def responder(transform, gold: dict | None = None):
    gold = gold or _gold()

    def reply(body: dict):
        prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
        score = gold[(TASK_ID.search(prompt).group(1), criterion_of(body))]
        ids = EVIDENCE_LINE.findall(prompt)
        return verdict(transform(score) if isinstance(score, int) else "not_applicable", ids[0],
                       rationale=f"Judged from {ids[0]}.")

    return reply


def _calibrate(server, *args):
    return CliRunner().invoke(app, ["calibrate", *map(str, args), "--drafter", "llm", "--model", "openai/fake-judge",
                                    "--api-base", server.base_url, "--no-cache", "--no-store", "--resamples", "50"])


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.mark.slow
def test_oracle_model_passes_what_the_set_can_measure(server, tmp_path):
    server.default = responder(lambda s: s)
    out = tmp_path / "r.json"
    result = _calibrate(server, mini_set(), "-o", out)
    report = json.loads(out.read_text())
    assert report["drafter"]["name"] == "llm" and report["epoch"]["parts"]["model"] == "openai/fake-judge"
    verdicts = {c["criterion_id"]: c["verdict"]["summary"] for c in report["criteria"]}
    measurable = [c["criterion_id"] for c in report["criteria"] if c["agreement"]["n"] >= 5]
    assert measurable and all(verdicts[c] == "calibrated" for c in measurable), verdicts
    assert verdicts["benchmarking"] == "failed gate: n 1 < 5 scored gold items"  # one item with claims
    assert result.exit_code == 1
    assert len(server.requests) == 4 * 8 + 10  # every applicable criterion once (the CUDA port with claims: all 10)


@pytest.mark.slow
def test_wrong_model_fails_the_gates_and_exits_1(server, tmp_path):
    server.default = responder(lambda s: 6 - s)  # mirrors every judgement
    out = tmp_path / "r.json"
    result = _calibrate(server, mini_set(), "-o", out)
    assert result.exit_code == 1, result.output
    assert "kernel_correctness: failed gate: QWK -" in result.stdout
    report = json.loads(out.read_text())
    correctness = next(c for c in report["criteria"] if c["criterion_id"] == "kernel_correctness")
    assert correctness["agreement"]["qwk"]["value"] < 0 and not correctness["verdict"]["passed"]


RUBRIC = """
[rubric]
id = "two-criteria"
version = "0.1.0"
title = "Correctness and tiling only"
scale = { min = 1, max = 5 }

[[criteria]]
id = "correct"
title = "Correct"
description = "Matches the reference on every shape."
evidence_kinds = ["sim.*", "nki.*"]
basis = ["sim.output", "sim.error"]
[criteria.levels]
1 = "wrong"
2 = "partly wrong"
3 = "right on tested shapes only"
4 = "right, minor gaps"
5 = "right everywhere"

[[criteria]]
id = "tiled"
title = "Tiled"
description = "Tiles fit the hardware."
evidence_kinds = ["nki.*", "sim.trace"]
basis = ["nki.kernel"]
[criteria.levels]
1 = "illegal"
2 = "poor"
3 = "under-used"
4 = "good"
5 = "ideal"
"""


@pytest.mark.slow
def test_every_gate_passing_exits_0(server, tmp_path):
    """A rubric is one TOML file: a two-criterion rubric, the set's gold renamed to it, an oracle model."""
    rubric = tmp_path / "two-criteria.toml"
    rubric.write_text(RUBRIC)
    dest = tmp_path / "two"
    shutil.copytree(mini_set(), dest)
    for gold in dest.glob("*/gold.toml"):
        labels = tomllib.loads(gold.read_text())["criteria"]
        gold.write_text(f"[criteria.correct]\nscore = {labels['kernel_correctness']['score']}\n"
                        f"[criteria.tiled]\nscore = {labels['tiling']['score']}\n")
    renamed = {"kernel_correctness": "correct", "tiling": "tiled"}
    gold = {(t, renamed[c]): s for (t, c), s in _gold().items() if c in renamed}
    server.default = responder(lambda s: s, gold)
    result = _calibrate(server, dest, "--rubric", rubric)
    assert result.exit_code == 0, result.output
    assert "all gates pass" in result.stdout
