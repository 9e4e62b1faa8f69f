"""load-transpose-in-loop: DMA transposes repeated inside a loop."""

from __future__ import annotations

import math

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import dst_node
from evidence.static.shapes import Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"


class LoadTransposeInLoop(Rule):
    """Flags `nl.load_transpose2d` / `nisa.dma_transpose` calls inside loops.

    A DMA transpose moves data element by element: on Trn1 it is much slower than a plain load
    and even on Trn2 it reaches at most 90% (HBM->SBUF) or 50% (SBUF->SBUF) of DMA throughput.
    Inside a loop of a memory-bound kernel it becomes the bottleneck (REFERENCE §5.2, §5.3 rule 10).

    A transpose in a branch the task never takes (`if use_dma_transpose:` with a default False
    that neither the task nor any call overrides) is not flagged; one behind such a flag whose
    value is unknown (callers disagree) is low severity and says so.

    The standalone dialect keeps `nisa.dma_transpose` (dst first) with the same DMA cost, so the
    rule judges both dialects.

    Fix: choose the HBM layout so no transpose is needed, or load normally and transpose on the
    otherwise idle TensorE with `nisa.nc_transpose`.
    """

    id = "load-transpose-in-loop"
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        _HEAD + "t = nl.load_transpose2d(a)\nfor i in nl.affine_range(4):\n    x = nl.load(b)\n",
        Valid(_HEAD + "import neuronxcc.nki.isa as nisa\n@nki.jit\ndef k(a, use_dma=False):\n"
              "    for i in nl.affine_range(4):\n        if use_dma:\n"
              "            t = nisa.dma_transpose(a[i * 128:(i + 1) * 128, :])\n        else:\n"
              "            t = nisa.nc_transpose(nl.load(a[i * 128:(i + 1) * 128, :]))\n",
              inputs={"a": ((512, 128), "bfloat16")}),
    ]
    INVALID = [
        Invalid(_HEAD + "for i in nl.affine_range(4):\n    t = nl.load_transpose2d(a[i * 128:(i + 1) * 128, :])\n", line=4),
        Invalid("import nki.language as nl\nimport nki.isa as nisa\nfor i in range(4):\n"
                "    t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)\n"
                "    nisa.dma_transpose(dst=t, src=a[i * 128:(i + 1) * 128, :])\n", line=5),
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name not in ("nl.load_transpose2d", "nisa.dma_transpose") or not call.loops:
            return
        # the count stated is what is known: a loop of unknown trip count may run once (it read "runs 1x")
        trips = math.prod(lp.trip or 1 for lp in call.loops)
        unknown = any(lp.trip is None for lp in call.loops)
        if not unknown and trips < 2:
            return  # a loop that runs once repeats nothing
        guard = self.ctx.branches.default_off_guard(call.function.node) if call.function else None
        times = f"{trips}x" if not unknown else f"at least {trips}x" if trips > 1 else "once per iteration of a loop of unknown trip count"
        t = call.tensor
        if t is None and (dst := dst_node(self.ctx, call)) is not None:
            t = v if isinstance(v := self.ctx.value(dst), Tensor) else None
        message = f"{call.name} inside a loop (line {call.loops[-1].start}) runs {times} as a DMA transpose"
        labels = {"api": call.name, "trip_count": "lower_bound" if unknown else "exact"}
        if guard is not None:
            message += f", only when '{guard[0]}' is set (it defaults to {guard[1]})"
            labels["guard"] = guard[0]
        self.report(call.node, message, severity=Severity.low if guard else None, labels=labels,
                    metrics={"trip_count": trips, "bytes_per_call": t.total_bytes if t else None})
