"""hoistable-load does not count a loop whose variable decides whether the load runs: the seventh public sweep
found "repeated once per iteration" on a decode-attention load guarded by `if t == num_tiles - 1:`."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from

SRC = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tails(a, b):
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.static_range(4):
        x = nl.load(a[:, t * 128:(t + 1) * 128])
        if GUARD:
            x = nl.load(b)
        nl.store(out[:, t * 128:(t + 1) * 128], value=x)
    return out
"""


def _hoistable(guard: str) -> list:
    a = analyze(SRC.replace("GUARD", guard), inputs=bindings_from({"a": ((128, 512), "float32"),
                                                                   "b": ((128, 128), "float32")}), entry="tails")
    return [f for f in a.findings if f.rule == "hoistable-load"]


def test_a_load_guarded_by_the_loop_variable_is_not_repeated_by_that_loop():
    assert not _hoistable("t == 3")
    (f,) = _hoistable("a.shape[0] == 128")  # decided once while tracing: the load repeats 4 times
    assert f.start == 11 and "repeated 4x" in f.message
