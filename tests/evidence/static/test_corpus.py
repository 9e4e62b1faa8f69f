"""Acceptance over the hand-written corpus: naive kernels get their expected findings, clean
(optimised) kernels get none, every corpus kernel analyses without a rule crash."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from _corpus import all_files, clean_files, corpus_entry, declared_findings, loader, other_files  # noqa: E402

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


@pytest.mark.parametrize("path", other_files(), ids=[p.name for p in other_files()])
def test_kernels_that_keep_findings_on_purpose_get_exactly_those(path):
    assert {"nki." + f.rule for f in _findings(path)} == set(declared_findings(path))


def test_false_positive_rate_is_zero_for_every_rule():
    assert len(clean_files()) >= 30  # every general corpus kernel that declares no finding counts
    flagged = {(p.name, f.rule, f.start) for p in clean_files() for f in _findings(p)}
    assert flagged == set()


@pytest.mark.parametrize("path", all_files(), ids=[p.name for p in all_files()])
def test_every_corpus_kernel_analyses_cleanly(path):
    _findings(path)


def test_finding_numbers_are_hand_computable_on_the_naive_matmul():
    # lhsT [512, 512] bf16 in 128x128 tiles (32 KiB, 256 B per partition), re-read for each of N/512 = 2
    # column blocks: 16 (m, k) tiles x 32 KiB x (2 - 1) = 512 KiB redundant. rhs tiles [128, 512] bf16
    # (128 KiB) re-read for each of M/128 = 4 row blocks: 8 (n, k) tiles x 128 KiB x 3 = 3 MiB redundant.
    naive = next(p for p in PAIRS if p.topic == "matmul_hoist").naive
    found = {(f.rule, f.start): f.metrics for f in _findings(naive)}
    lhs = next(m for (r, _), m in found.items() if r == "hoistable-load" and m["bytes_per_load"] == 32768)
    rhs = next(m for (r, _), m in found.items() if r == "hoistable-load" and m["bytes_per_load"] == 131072)
    assert (lhs["trip_count"], lhs["redundant_bytes"]) == (2, 16 * 32768)
    assert (rhs["trip_count"], rhs["redundant_bytes"]) == (4, 8 * 131072 * 3)
    small = next(m for (r, _), m in found.items() if r == "small-dma")
    assert (small["bytes_per_partition"], small["trip_count"]) == (256, 32)
