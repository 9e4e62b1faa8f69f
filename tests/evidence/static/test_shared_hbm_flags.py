"""shared-hbm-nested honours the compiler flag a kernel passes to skip that very check: the seventh public sweep
found it critical on a reduction buffer a decode-attention helper creates under
`experimental_flags='skip-non-top-level-shared-hbm-check'`."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from

SRC = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit(FLAGS)
def halves(a):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)

    def spill(t):
        buf = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(buf, t)
        return nl.load(buf)

    nl.store(out, spill(nl.load(a)))
    return out
"""


def _nested(flags: str) -> list:
    a = analyze(SRC.replace("FLAGS", flags), inputs=bindings_from({"a": ((128, 64), "float32")}), entry="halves")
    return [f for f in a.findings if f.rule == "shared-hbm-nested"]


def test_the_skip_flag_lifts_the_nested_shared_hbm_finding():
    assert not _nested("experimental_flags='enable-mutable-parameter, skip-non-top-level-shared-hbm-check'")
    (f,) = _nested("experimental_flags='enable-mutable-parameter'")
    assert f.start == 10 and "helper 'spill'" in f.message
