"""Acceptance over the hand-written corpus: naive kernels get their expected findings, clean
(optimised) kernels get none, every corpus kernel analyses without a rule crash."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from _corpus import all_files, clean_files, corpus_entry, loader  # noqa: E402

from evidence.static.engine import analyze  # noqa: E402
from evidence.static.framework import load_rules  # noqa: E402

PAIRS = loader.pairs()


def _findings(path: Path):
    src, inputs, entry, opts = corpus_entry(path)
    result = analyze(src, file=path.name, inputs=inputs, entry=entry, options=opts)
    assert not result.failures, result.failures
    return result.findings


def test_corpus_has_pairs_and_clean_kernels():
    assert len(PAIRS) >= 3 and len(clean_files()) >= 3


@pytest.mark.parametrize("pair", PAIRS, ids=[p.topic for p in PAIRS])
def test_naive_kernel_gets_expected_findings(pair):
    got = {"nki." + f.rule for f in _findings(pair.naive)}
    assert set(pair.expected_findings) <= got, f"missing {set(pair.expected_findings) - got}"


@pytest.mark.parametrize("pair", PAIRS, ids=[p.topic for p in PAIRS])
def test_optimised_kernel_has_no_performance_finding(pair):
    perf = {r.id for r in load_rules() if r.performance}
    got = [(f.rule, f.start) for f in _findings(pair.optimised) if f.rule in perf]
    assert got == []


def test_false_positive_rate_is_zero_for_every_rule():
    flagged = {(p.name, f.rule, f.start) for p in clean_files() for f in _findings(p)}
    assert flagged == set()


@pytest.mark.parametrize("path", all_files(), ids=[p.name for p in all_files()])
def test_every_corpus_kernel_analyses_cleanly(path):
    _findings(path)
