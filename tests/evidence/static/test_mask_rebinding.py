"""affine-loop-carried-dependency does not count a mask rebuilt from its previous value: the eighth public sweep
found three critical "'mask' carries state" findings on a MoE kernel that narrows an optional mask argument per
tile (`mask = (i_p + 128 * i < n) if mask is None else (i_p + 128 * i < n) & mask`). A mask is a trace-time
predicate, no data between iterations; running tile state rebound from itself stays a finding."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from

SRC = """import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def act(h, n_rows: int, mask=None):
    out = nl.ndarray((256, 512), dtype=h.dtype, buffer=nl.shared_hbm)
    state = nl.zeros((128, 512), dtype=h.dtype)
    for i in nl.affine_range(2):
        BODY
        t = nl.load(h[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(t, mask=mask))
    return out
"""


def _carried(body: str) -> list:
    a = analyze(SRC.replace("BODY", body), inputs=bindings_from({"h": ((256, 512), "float32")}), entry="act")
    return [f.message for f in a.findings if f.rule == "affine-loop-carried-dependency"]


def test_a_mask_rebuilt_from_itself_is_no_carried_state():
    grid = "nl.arange(128)[:, None] + 128 * i < n_rows"
    assert _carried(f"mask = {grid} if mask is None else ({grid}) & mask") == []
    assert _carried(f"mask = ({grid}) & mask") == []
    assert _carried("mask = (2 * i < 3) if mask is None else mask & (2 * i < 3)") == []  # on the loop variable


def test_tile_state_rebound_from_itself_is_still_carried():
    assert _carried("state = nl.add(state, 1.0)") == ["'state' carries state across iterations of affine_range (line 10)"]
    assert _carried("state = (state < 1.0) & state") != []  # a comparison of tiles is data, not a predicate


def test_a_tile_recast_from_itself_is_no_carried_state():
    # `v = nl.copy(v, dtype=...)` is the same every iteration (a cast of a cast rounds once); a masked copy is not
    assert _carried("state = nl.copy(state, dtype=nl.float32)") == []
    assert _carried("state = nisa.tensor_copy(state)") == []
    assert _carried("state = nl.copy(state, mask=mask)") != []
    assert _carried("state = nl.copy(nl.add(state, 1.0))") != []
