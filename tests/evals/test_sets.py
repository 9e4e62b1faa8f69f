"""The gold-labelled sets under evals/ are usable: items load, gold is complete and valid, and every
kernel behaves in the simulator as its gold file says it was built to (evals/check.py)."""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

import pytest

from evals.check import SETS, coverage, item_dirs, load_set, simulation_problems
from grader.rubric import load_rubric

CALIBRATION, AUDIT = SETS


@cache
def loaded(set_dir: Path):
    """The set, loaded once per test session (simulation runs are cached on it as well)."""
    return load_set(set_dir)


def _items():
    return [pytest.param(s, p.name, id=f"{s.name}/{p.name}") for s in SETS for p in item_dirs(s)]


def test_every_item_loads_with_complete_valid_gold():
    problems = [p for s in SETS for p in loaded(s).problems]
    assert not problems, "\n".join(problems)


def test_calibration_set_covers_every_criterion_at_every_level():
    """At least 40 items; every criterion has gold at low (1-2), middle (3) and high (4-5) levels."""
    the_set = loaded(CALIBRATION)
    assert len(the_set.golds) >= 40
    table = coverage(the_set.golds, load_rubric())
    thin = {cid: counts for cid, counts in table.items() if not all(counts[b] for b in ("low", "mid", "high"))}
    assert not thin, f"criteria without gold at some level: {thin}"


def test_calibration_set_has_the_required_kinds_of_item():
    """Bases for at least 10 operations, at least 8 CUDA migrations and 6 benchmark-claim items."""
    golds, subs = loaded(CALIBRATION).golds, loaded(CALIBRATION).submissions
    bases = {g["meta"]["operation"] for g in golds.values() if g["meta"]["category"] == "base"}
    assert len(bases) >= 10
    assert sum(subs[n].manifest.migration is not None for n in golds) >= 8
    assert sum(subs[n].manifest.claims is not None for n in golds) >= 6


def test_audit_set_is_separate_from_the_calibration_set():
    """At least 12 audit items, none sharing a kernel with a calibration item."""
    audit = loaded(AUDIT)
    assert len(audit.golds) >= 12
    calibration_kernels = {s.kernel_source for s in loaded(CALIBRATION).submissions.values()}
    shared = [n for n, s in audit.submissions.items() if s.kernel_source in calibration_kernels]
    assert not shared, f"audit items that reuse a calibration kernel: {shared}"


@pytest.mark.slow
@pytest.mark.parametrize(("set_dir", "name"), _items())
def test_item_simulates_as_designed(set_dir, name):
    the_set = loaded(set_dir)
    if name not in the_set.golds:
        pytest.fail(f"{name} has no usable gold.toml (see the gold test)")
    problems = simulation_problems(the_set, name)
    assert not problems, "\n".join(problems)


def test_gold_problems_are_reported(tmp_path: Path):
    """The check itself fails on a broken gold file (a test of the checker, with a copied item)."""
    item = tmp_path / "set" / "add-base"
    shutil.copytree(CALIBRATION / "add-base", item)
    text = (item / "gold.toml").read_text()
    text = text.replace('[criteria.tiling]\nscore = 5', '[criteria.tiling]\nscore = 7')
    text = text.replace('kernel.py:20-25', 'kernel.py:20-99')
    (item / "gold.toml").write_text(text + '\n[criteria.speed]\nscore = 3\nrationale = "not a criterion of the rubric"\n')
    problems = load_set(item.parent).problems
    assert any("criteria.tiling.score: 7" in p for p in problems)
    assert any("criteria.speed: not a criterion" in p for p in problems)
    assert any("kernel.py:20-99 is not a range" in p for p in problems)


def test_simulation_expectations_are_enforced(tmp_path: Path):
    """An expectation the kernel does not meet is reported with the measured value."""
    item = tmp_path / "set" / "add-base"
    shutil.copytree(CALIBRATION / "add-base", item)
    text = (item / "gold.toml").read_text().replace('"partition_utilisation >= 0.8"', '"partition_utilisation <= 0.5"')
    (item / "gold.toml").write_text(text)
    loaded = load_set(item.parent)
    problems = simulation_problems(loaded, "add-base")
    assert any("partition_utilisation <= 0.5" in p and "fails" in p for p in problems), problems
