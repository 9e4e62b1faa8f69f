"""thread-emulation judges a DMA by the loop that moves its row: a loop that spreads the quarters of one row over
the four partition quadrants (to search them on 128 partitions at once) steps columns, not rows. Its finding
belonged to that quadrant loop, where no compute ran for the simulation to contradict it, and capped tiling and
data movement at 1 on neuronx-distributed's index kernel; the row loop's finding is the one to weigh."""

from __future__ import annotations

from evidence.static.engine import analyze
from evidence.static.model import InputBinding

SOURCE = '''\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def quadrant_cumsum(mask):
    rows, cols = mask.shape
    q_cols = cols // 4
    out = nl.ndarray((rows, 128, q_cols), dtype=mask.dtype, buffer=nl.shared_hbm)
    zeros = nl.zeros((128, q_cols), dtype=nl.float32, buffer=nl.sbuf)
    for r in nl.affine_range(rows):
        spread = nl.zeros((128, q_cols), dtype=mask.dtype, buffer=nl.sbuf)
        for q in nl.affine_range(4):
            spread[nl.ds(q * 32, 1), :] = nl.load(mask[r, nl.ds(q * q_cols, q_cols)])
        run = nisa.tensor_tensor_scan(spread, zeros, initial=0, op0=nl.add, op1=nl.add)
        nl.store(out[r], value=run)
    return out
'''


def test_a_loop_spreading_one_row_over_quadrants_walks_no_rows():
    a = analyze(SOURCE, inputs=[InputBinding("mask", (8, 1024), "float32")], entry="quadrant_cumsum")
    found = [f for f in a.findings if f.rule == "thread-emulation"]
    # one finding, on the row loop (line 13), not on the quadrant loop inside it (line 15)
    assert [f.metrics["loop_line"] for f in found] == [13]
