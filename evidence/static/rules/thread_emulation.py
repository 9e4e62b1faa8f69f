"""thread-emulation: per-element or per-row loops that reproduce CUDA threads."""

from __future__ import annotations

import math

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo, LoopInfo
from evidence.static.rulekit import DMA_CALLS, ELEMENTWISE

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"


class ThreadEmulation(Rule):
    """Flags loops whose body moves or computes tiles of one partition (or one element): a loop
    standing in for CUDA threads.

    NKI's unit of work is a tile instruction over up to 128 partitions; a 1-partition tile uses
    1/128 of every engine and pays the full fixed cost (~64-100 cycles per instruction, ~1.3 µs
    per DMA) for each element or row. Per-element loops are the pathological case of the
    performance guide (REFERENCE §5.3 rule 5, §6).

    Fix: put 128 rows on the partition axis and process whole tiles; express per-element logic
    with index expressions, masks, `nl.where` or `tensor_tensor_scan`.
    """

    id = "thread-emulation"
    criteria = ("migration_fidelity", "tiling", "performance")
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n"
              "        y = nl.exp(x)\n", inputs={"a": ((512, 256), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(512):\n        x = nl.load(a[i:i + 1, :])\n"
                "        y = nl.exp(x)\n", inputs={"a": ((512, 256), "float32")}, line=6),
        _HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(64):\n        for j in nl.affine_range(64):\n"
        "            x = nl.load(a[i, j])\n", 
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._hits: dict[int, list[CallInfo]] = {}

    def on_call(self, call: CallInfo) -> None:
        if not call.loops or (call.name not in DMA_CALLS and call.name not in ELEMENTWISE):
            return
        t = call.tensor
        if call.name == "nl.store":
            v = self.ctx.value(call.arg(1, "value"))
            t = v if hasattr(v, "partitions") else None
        if t is None or t.partitions != 1:
            return
        self._hits.setdefault(call.loops[-1].id, []).append(call)

    def leave_loop(self, loop: LoopInfo) -> None:
        calls = self._hits.pop(loop.id, None)
        if not calls:
            return
        trips = math.prod(lp.trip or 1 for lp in calls[0].loops)
        if trips < 2 and (loop.trip or 2) < 2:
            return
        first = calls[0]
        elems = first.tensor.free_elems if first.tensor else None
        what = "one element" if elems == 1 else "one partition"
        self.report((first.start, first.end),
                    f"loop at line {loop.start} processes {what} per instruction ({len(calls)} calls, {trips} iterations)",
                    metrics={"trip_count": trips, "tile_partitions": 1, "tile_elements": elems, "n_ops": len(calls),
                             "loop_line": loop.start})
