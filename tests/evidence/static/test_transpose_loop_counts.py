"""load-transpose-in-loop states how often a DMA transpose runs only as far as the loop bounds are known: the
eighth public sweep found "runs 1x" on transposes under loops whose bounds come from a config object (4 per
group, and once per group of an outer loop the analysis cannot see)."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from

SRC = """import nki
import nki.isa as nisa
import nki.language as nl


def tiles_of(plan):
    return plan.tiles


@nki.jit
def blocks(a, plan):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for g in range(OUTER):
        for t in range(tiles_of(plan)):
            buf = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_transpose(dst=buf, src=a[t * 128:(t + 1) * 128, :])
            nisa.dma_copy(dst=out[t * 128:(t + 1) * 128, :], src=buf)
    return out
"""


def _found(outer: str):
    a = analyze(SRC.replace("OUTER", outer), inputs=bindings_from({"a": ((512, 128), "bfloat16")}), entry="blocks")
    return [f for f in a.findings if f.rule == "load-transpose-in-loop"]


def test_an_unknown_trip_count_is_not_reported_as_a_count():
    [f] = _found("3")
    assert "runs at least 3x as a DMA transpose" in f.message and f.labels["trip_count"] == "lower_bound"
    [f] = _found("1")
    assert "runs once per iteration of a loop of unknown trip count" in f.message and "1x" not in f.message


def test_a_known_count_is_stated_and_a_loop_that_runs_once_repeats_nothing():
    src = SRC.replace("range(tiles_of(plan))", "range(4)")
    a = analyze(src.replace("OUTER", "2"), inputs=bindings_from({"a": ((512, 128), "bfloat16")}), entry="blocks")
    [f] = [f for f in a.findings if f.rule == "load-transpose-in-loop"]
    assert "runs 8x as a DMA transpose" in f.message and f.labels["trip_count"] == "exact"
    a = analyze(src.replace("OUTER", "1").replace("range(4)", "range(1)"),
                inputs=bindings_from({"a": ((512, 128), "bfloat16")}), entry="blocks")
    assert not [f for f in a.findings if f.rule == "load-transpose-in-loop"]
