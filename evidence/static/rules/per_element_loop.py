"""per-element-loop: compute instructions on one (or a few) elements per partition, walked column by column."""

from __future__ import annotations

import math

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import AssignInfo, CallInfo, LoopInfo
from evidence.static.rulekit import DMA_CALLS
from evidence.static.shapes import Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\nimport numpy as np\n"
# At most this many elements per partition per instruction is "per element".
MAX_ELEMS = 4
# Fewer walked iterations than this is a short unrolled tail, not a per-element loop.
MIN_TRIPS = 64


class PerElementLoop(Rule):
    """Flags compute instructions whose operand is a free-axis slice of at most 4 elements that a
    loop of 64 or more iterations walks: a cumulative sum advanced column by column instead of
    `nisa.tensor_tensor_scan`, a row reduction summed element by element instead of one
    `nisa.tensor_reduce`/`nl.sum`, a per-column loop of `[128, 1]` instructions.

    Every instruction pays a fixed cost (about 64 cycles of initiation interval on VectorE, more
    with dependencies) whatever its size; an instruction on one element per partition does 1/512 of
    the work a 512-wide one does for about the same time, so instruction overhead dominates and the
    trace shows thousands of instructions with a tiny mean free size (REFERENCE §3.7, §5.3 rule 5a).

    Fix: process whole free-axis tiles per instruction: `nl.sum`/`nisa.tensor_reduce` for
    reductions, `nisa.tensor_tensor_scan` for running sums and recurrences (carrying the last column
    between chunks), `nl.where`/masks for per-element choices.
    """

    id = "per-element-loop"
    severity = Severity.high
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(x):\n    for t in nl.affine_range(4):\n        xt = nl.load(x[t * 128:(t + 1) * 128, :])\n"
              "        s = nl.sum(xt, axis=1, keepdims=True)\n", inputs={"x": ((512, 2048), "float32")}),
        # [P, 1] statistics once per row tile: small instructions, but not a walk along the free axis
        Valid(_HEAD + "@nki.jit\ndef k(x):\n    for t in nl.affine_range(128):\n        xt = nl.load(x[t * 128:(t + 1) * 128, :])\n"
              "        m = nl.max(xt, axis=1, keepdims=True)\n        r = nl.reciprocal(m)\n",
              inputs={"x": ((16384, 512), "float32")}),
        # a short unrolled loop over a few columns
        Valid(_HEAD + "@nki.jit\ndef k(x):\n    xt = nl.load(x)\n    acc = nl.zeros((128, 1), nl.float32)\n"
              "    for j in nl.static_range(8):\n        acc[...] = nl.add(acc, xt[:, j:j + 1])\n", inputs={"x": ((128, 8), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(x):\n    xt = nl.load(x)\n    total = nl.zeros((128, 1), nl.float32)\n"
                "    for j in nl.sequential_range(2048):\n"
                "        total[...] = nisa.tensor_tensor(total, xt[:, j:j + 1], np.add, dtype=nl.float32)\n",
                inputs={"x": ((128, 2048), "float32")}, line=10),
        # a running sum stored column by column
        Invalid(_HEAD + "@nki.jit\ndef k(x):\n    xt = nl.load(x)\n    run = nl.ndarray((128, 1024), nl.float32)\n"
                "    c = nl.zeros((128, 1), nl.float32)\n    for j in nl.sequential_range(1024):\n"
                "        c = nl.add(c, xt[:, j])\n        run[:, j:j + 1] = nl.copy(c)\n",
                inputs={"x": ((128, 1024), "float32")}, line=11),
        Invalid("import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
                "@nki.jit\ndef k(x):\n    xt = nl.load(x)\n    total = nl.ndarray((128, 1), nl.float32)\n"
                "    for j in range(512):\n        nisa.tensor_tensor(total, total, xt[:, j:j + 1], op=nl.add)\n",
                inputs={"x": ((128, 512), "float32")}, line=9),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._hits: dict[int, list[tuple[CallInfo | AssignInfo, int, int]]] = {}

    def _narrow_walk(self, node: cst.BaseExpression | None, loops: tuple[LoopInfo, ...]) -> tuple[int, int, LoopInfo] | None:
        """(free elements, walked iterations, outermost walking loop) when `node` is a slice of at
        most MAX_ELEMS elements per partition whose free-axis index moves with enclosing loops."""
        if isinstance(node, cst.Name):
            b = self.ctx.lookup(node.value)
            node = b.node if b is not None else None
        if not isinstance(node, cst.Subscript):
            return None
        view = self.ctx.value(node)
        if not isinstance(view, Tensor) or view.buffer == "hbm" or view.free_elems is None or view.free_elems > MAX_ELEMS:
            return None
        base = self.ctx.value(node.value)
        pdim = base.pdim if isinstance(base, Tensor) else 0
        deps: frozenset[int] = frozenset()
        for el in node.slice[pdim + 1:]:
            deps |= self.ctx.deps(el.slice)[0]
        walking = [lp for lp in loops if lp.id in deps]
        if not walking or any(lp.trip is None for lp in walking):
            return None
        trips = math.prod(lp.trip for lp in walking)
        return (view.free_elems, trips, walking[0]) if trips >= MIN_TRIPS else None

    def _check(self, where: CallInfo | AssignInfo, nodes: list[cst.BaseExpression | None]) -> None:
        for node in nodes:
            hit = self._narrow_walk(node, where.loops)
            if hit is not None:
                elems, trips, loop = hit
                self._hits.setdefault(loop.id, []).append((where, elems, trips))
                return

    def on_call(self, call: CallInfo) -> None:
        if not call.loops or call.name in DMA_CALLS or not call.name.startswith(("nl.", "nisa.")):
            return
        self._check(call, [a.value for a in call.node.args])

    def on_assign(self, a: AssignInfo) -> None:
        if a.kind == "store" and a.loops and isinstance(a.value_node, cst.Call) and isinstance(a.node, cst.Assign):
            self._check(a, [t.target for t in a.node.targets])

    def leave_loop(self, loop: LoopInfo) -> None:
        hits = self._hits.pop(loop.id, None)
        if not hits:
            return
        first, elems, trips = min(hits, key=lambda h: h[0].start)
        n_ops = len({h[0].start for h in hits})
        self.report((first.start, first.end),
                    f"loop at line {loop.start} walks the free axis {elems} element(s) per partition at a time: "
                    f"{n_ops} instruction(s) x {trips} iterations",
                    metrics={"trip_count": trips, "tile_elements": elems, "n_ops": n_ops, "loop_line": loop.start,
                             "instructions": n_ops * trips})
