"""small-dma states how often a transfer repeats only as far as the loop bounds are known: the seventh public
sweep found "144x in a loop" on a store that ran 72 times, under a loop whose bound a helper module computes."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from

SRC = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from tiles import n_tiles


@nki.jit
def rows(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(6):
        for t in nl.affine_range(n_tiles(a.shape[1])):
            x = nl.load(a[r, t * 2:(t + 1) * 2])
            nl.store(out[r, t * 2:(t + 1) * 2], value=x)
    return out
"""


def test_an_unknown_trip_count_is_not_reported_as_a_count():
    a = analyze(SRC, inputs=bindings_from({"a": ((6, 2), "float32")}), entry="rows")
    found = [f for f in a.findings if f.rule == "small-dma"]
    assert found
    for f in found:
        assert "at least 6x in a loop" in f.message and "12x" not in f.message
