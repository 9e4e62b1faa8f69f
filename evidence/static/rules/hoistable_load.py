"""hoistable-load: an HBM load repeated by a loop it does not depend on."""

from __future__ import annotations

import math

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import dma_copy_load

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
_SA = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
# Per-partition SBUF a cached operand may reasonably take (a quarter of the ~192 KiB partition).
CACHE_BUDGET = 48 * 1024


class HoistableLoad(Rule):
    """Flags loads (`nl.load`, and in the standalone dialect also `nisa.dma_copy` from HBM into an
    on-chip tile) that enclosing loops repeat without the load depending on them: either loop-
    invariant in the innermost loops (hoist it), or invariant in an outer loop while the tiles
    it loads per outer iteration would fit in SBUF (load them once and reuse).

    Every repeat is another DMA of the same HBM bytes: HBM bandwidth is the scarce resource
    (the roofline knee is ~220 FLOP/B) and each DMA pays ~1.3 µs fixed cost. The matmul tutorial
    gains 1.2x from hoisting alone and 3x more from blocking (REFERENCE §5.2, §5.3 rule 1).

    Fix: move the load above the loops it does not depend on; for operands reused across an
    outer loop, load them once into an SBUF buffer (block dimension) and index it.
    """

    id = "hoistable-load"
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a, b):\n    w = nl.load(b)\n    for i in nl.affine_range(4):\n"
              "        x = nl.load(a[i * 128:(i + 1) * 128, :])\n", inputs={"a": ((512, 512), "bfloat16"), "b": ((128, 512), "bfloat16")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a, b):\n    for i in nl.affine_range(4):\n        w = nl.load(b)\n"
                "        x = nl.load(a[i * 128:(i + 1) * 128, :])\n",
                inputs={"a": ((512, 512), "bfloat16"), "b": ((128, 512), "bfloat16")}, line=6),
        # Without input shapes the trip count is unknown: still hoistable, numbers omitted.
        Invalid(_HEAD + "@nki.jit\ndef k(a, b, n):\n    for i in nl.affine_range(n):\n        w = nl.load(b)\n", line=6),
        Invalid(_HEAD + "@nki.jit\ndef k(a, b):\n    for m in nl.affine_range(4):\n        for n in nl.affine_range(2):\n"
                "            for j in nl.affine_range(4):\n                x = nl.load(a[j * 128:(j + 1) * 128, m * 128:(m + 1) * 128])\n"
                "                y = nl.load(b[j * 128:(j + 1) * 128, n * 512:(n + 1) * 512])\n",
                inputs={"a": ((512, 512), "bfloat16"), "b": ((512, 1024), "bfloat16")}, line=8),
        Invalid(_SA + "@nki.jit\ndef k(a, b):\n    for i in range(4):\n        w = nl.ndarray((128, 512), dtype=b.dtype, "
                "buffer=nl.sbuf)\n        nisa.dma_copy(dst=w, src=b)\n",
                inputs={"a": ((512, 512), "bfloat16"), "b": ((128, 512), "bfloat16")}, line=8),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._guards: list[frozenset[int]] = []  # loops the tests of the enclosing `if`s depend on

    def visit_If(self, node: cst.If) -> None:
        self._guards.append(self.ctx.deps(node.test)[0])

    def leave_If(self, node: cst.If) -> None:
        self._guards.pop()

    def on_call(self, call: CallInfo) -> None:
        if not call.loops:
            return
        if call.name in ("nl.load", "nl.load_transpose2d"):
            t, deps = call.tensor, call.deps
        else:
            load = dma_copy_load(self.ctx, call)
            if load is None:
                return
            # Only the HBM side decides what is re-read: the destination tile may be fresh each iteration.
            t, deps = load[1], self.ctx.deps(load[0])[0]
        # under `if t == last:` the load runs on one iteration of t, not on each: t does not repeat it
        guarded = frozenset().union(*self._guards) if self._guards else frozenset()
        invariant = [lp for lp in call.loops
                     if lp.id not in deps and lp.id not in guarded and (lp.trip is None or lp.trip > 1)]
        if not invariant:
            return
        per_load = t.total_bytes if t is not None else None
        inner_free = all(lp.id not in deps for lp in call.loops[call.loops.index(invariant[0]):])
        if not inner_free:
            # Reuse across an outer loop needs the tiles of the inner dependent loops kept in SBUF.
            inner = call.loops[call.loops.index(invariant[-1]) + 1:]
            tiles = math.prod(lp.trip or 10**6 for lp in inner if lp.id in deps)
            per_part = (t.free_bytes or 0) * tiles if t is not None and t.free_bytes else None
            if per_part is None or per_part > CACHE_BUDGET:
                return
        known = all(lp.trip is not None for lp in invariant)
        repeats = math.prod(lp.trip for lp in invariant) if known else None  # type: ignore[misc]
        outer = invariant[0]
        redundant = per_load * (repeats - 1) * _other_trips(call, invariant) if per_load and repeats else None
        metrics = {"trip_count": repeats, "bytes_per_load": per_load, "loop_line": outer.start,
                   "redundant_bytes": redundant}
        times = f"{repeats}x" if repeats else "once per iteration"
        self.report(call.node, f"{call.name} does not depend on the loop at line {outer.start} "
                    f"({'+'.join(lp.vars[0] if lp.vars else '?' for lp in invariant)}) and is repeated {times}",
                    metrics=metrics)


def _other_trips(call: CallInfo, invariant: list) -> int:
    """How many times the load runs for each fixed value of the invariant loops."""
    return math.prod((lp.trip or 1) for lp in call.loops if lp not in invariant)
