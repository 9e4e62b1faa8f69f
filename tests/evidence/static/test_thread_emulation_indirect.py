"""thread-emulation on indirect loads: an index tile cut from a tile whose layout the analysis does not know
(`table[j, i_p, 0]`, a helper's parameter) keeps its partition-placed arange on the partitions, so the load
gathers 128 rows, not one row of 128 elements. NxDI's paged-cache loader read as one partition per instruction
("2 calls, 1 iterations", a loop of unknown trip count counted as 1)."""

from __future__ import annotations

from evidence.static.engine import analyze
from evidence.static.model import InputBinding

GATHER = '''\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def load_rows(dst, cache, table, n_loads, width):
    for j in nl.affine_range(n_loads):
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(width)[None, :]
        dst[j, i_p, i_f] = nl.load(cache[table[j, i_p, 0], i_f])


@nki.jit
def gather(cache, table):
    out = nl.ndarray((2, 128, 64), dtype=cache.dtype, buffer=nl.shared_hbm)
    ids = nl.load(table)
    buf = nl.zeros((2, nl.par_dim(128), 64), dtype=cache.dtype)
    load_rows(buf, cache, ids.reshape((1, 128, 2)), 2, 64)
    for j in nl.affine_range(2):
        nl.store(out[j], value=buf[j])
    return out
'''

INPUTS = [InputBinding("cache", (512, 64), "float32"), InputBinding("table", (128, 2), "int32")]


def test_an_indirect_load_of_128_rows_is_not_one_partition():
    a = analyze(GATHER, inputs=INPUTS, entry="gather")
    assert not [f for f in a.findings if f.rule == "thread-emulation"]


def test_a_true_row_walk_of_unknown_trip_count_says_so():
    walk = GATHER.replace("dst[j, i_p, i_f] = nl.load(cache[table[j, i_p, 0], i_f])",
                          "dst[j, 0:1, i_f] = nl.load(cache[j, i_f])")
    walk = walk.replace("def gather(cache, table):", "def gather(cache, table, n):").replace(
        "ids.reshape((1, 128, 2)), 2, 64)", "ids.reshape((1, 128, 2)), n, 64)")  # n: a trip count not known
    a = analyze(walk, inputs=INPUTS, entry="gather")
    (f,) = [f for f in a.findings if f.rule == "thread-emulation"]
    assert "iterations of a loop of unknown trip count" in f.message, f.message
