"""data_movement judges small transfers by the bytes they move (the rubric's "mostly small transfers"
against "one avoidable small transfer pattern"), from the simulation's per-line DMA sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.evaluate import evaluate

pytestmark = pytest.mark.slow

MANIFEST = """[task]
id = "row-mean"
title = "Row means, fp32"
description = "out[r] = mean(x[r, :]) for x [rows, cols] fp32; rows a multiple of 128"
target = "trn2"

[kernel]
file = "kernel.py"
entry = "row_mean"

[[inputs]]
name = "x"
shape = [512, 1024]
dtype = "float32"
distribution = "normal"

[reference]
file = "reference.py"
entry = "row_mean_ref"
"""
REFERENCE = "import numpy as np\n\n\ndef row_mean_ref(x):\n    return x.astype(np.float64).mean(axis=1, keepdims=True).astype(np.float32)\n"
HEAD = """import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def row_mean(x):
    rows, cols = x.shape
    assert rows % 128 == 0, "rows must be a multiple of 128"
    out = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // 128):
"""
# 4 KiB per partition in, 4 B per partition out per tile: half the transfers, almost none of the bytes
PER_TILE_STORE = HEAD + """        tile = nl.load(x[t * 128:(t + 1) * 128, :])
        total = nisa.tensor_reduce(np.add, tile, axis=1, keepdims=True, dtype=nl.float32)
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.multiply(total, 1.0 / cols))
    return out
"""
# the same sums over 32-column pieces: every load moves 128 B per partition
PIECEWISE_LOADS = HEAD + """        total = nl.zeros((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        for c in nl.sequential_range(cols // 32):
            piece = nl.load(x[t * 128:(t + 1) * 128, c * 32:(c + 1) * 32])
            total += nisa.tensor_reduce(np.add, piece, axis=1, keepdims=True, dtype=nl.float32)
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.multiply(total, 1.0 / cols))
    return out
"""


def _evaluate(tmp_path: Path, kernel: str):
    (tmp_path / "submission.toml").write_text(MANIFEST)
    (tmp_path / "reference.py").write_text(REFERENCE)
    (tmp_path / "kernel.py").write_text(kernel)
    d = evaluate(tmp_path)
    (sizes,) = [i for i in d.evidence.items if i.kind == "sim.dma_sizes"]
    return d, sizes


def test_a_small_per_tile_store_beside_large_loads_is_one_pattern_not_mostly_small(tmp_path):
    d, sizes = _evaluate(tmp_path, PER_TILE_STORE)
    assert d.criterion("kernel_correctness").score == 5
    assert sizes.metrics["small_fraction"] == 0.5 and sizes.metrics["small_byte_fraction"] < 0.01
    assert (sizes.labels["small_transfers"], sizes.metrics["small_lines"]) == ("pattern", 1)
    assert "50% under 512 B per partition; 1 line(s) issue such transfers repeatedly" in sizes.title
    dm = d.criterion("data_movement")
    assert dm.score == 4 and sizes.id in {c.evidence_id for c in dm.citations}


def test_loads_in_small_pieces_are_mostly_small_transfers(tmp_path):
    d, sizes = _evaluate(tmp_path, PIECEWISE_LOADS)
    assert d.criterion("kernel_correctness").score == 5
    assert sizes.labels["small_transfers"] == "mostly" and sizes.metrics["small_byte_fraction"] > 0.9
    assert d.criterion("data_movement").score <= 2
