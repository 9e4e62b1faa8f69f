"""partition-over-128: a tile whose partition dimension exceeds 128."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import P_MAX, shape_text
from evidence.static.shapes import ALLOC_CALLS, LOAD_CALLS


class PartitionOver128(Rule):
    """Flags SBUF/PSUM tiles (allocations and loaded tiles) whose partition dimension is over 128.

    SBUF and PSUM have 128 partitions; the first (par_dim) axis of every on-chip tile maps to
    them, so a larger partition size does not compile ("number of partitions ... exceed
    architecture limitation of 128", TC#1).

    Fix: tile the leading axis in chunks of nl.tile_size.pmax (128) with a loop, or move the long
    axis to the free dimension.
    """

    id = "partition-over-128"
    severity = Severity.critical
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        Valid("t = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)\n"),
        Valid("def k(a):\n    x = nl.load(a[0:128, :])\n", inputs={"a": ((512, 64), "float32")}),
        Valid("t = nl.ndarray((256, 1024), dtype=nl.float32, buffer=nl.shared_hbm)\n"),
    ]
    INVALID = [
        Invalid("t = nl.zeros((256, 512), dtype=nl.float32, buffer=nl.sbuf)\n", line=1),
        Invalid("@nki.jit\ndef k(a):\n    x = nl.load(a)\n", inputs={"a": ((512, 64), "float32")}, line=3),
        Invalid("t = nl.ndarray((nl.tile_size.pmax * 2, 4), dtype=nl.bfloat16, buffer=nl.psum)\n"),
        # The standalone dialect has the same hardware limit.
        Invalid("import nki\nimport nki.language as nl\nt = nl.ndarray((256, 4), dtype=nl.bfloat16, buffer=nl.sbuf)\n", line=3),
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name not in ALLOC_CALLS and call.name not in LOAD_CALLS:
            return
        t = call.tensor
        if t is None or t.buffer not in ("sbuf", "psum"):
            return
        p = t.partitions
        if p is not None and p > P_MAX:
            self.report(call.node, f"{call.name} makes a {t.buffer} tile {shape_text(t)} with {p} partitions (limit 128)",
                        metrics={"partitions": p, "limit": P_MAX}, labels={"buffer": t.buffer})
