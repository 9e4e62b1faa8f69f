"""underused-partitions: tiles on fewer than 128 partitions when the data has more rows."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import P_MAX
from evidence.static.shapes import Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"


class UnderusedPartitions(Rule):
    """Flags loads that bring 2-127 partitions into SBUF while the source tensor's partition
    axis has at least 128 rows and a loop walks that axis in those small steps (the tiling
    chose them). A single remainder tile (the 44 rows left after 2 x 128 of 300) is not flagged:
    the data offers no more rows there.

    Vector, Scalar and GpSimd process all partitions in the same time as one: a 32-partition
    tile runs element-wise work at a quarter of the engine's throughput, and DMAs spread over
    fewer partitions (REFERENCE §5.2, §5.3 rule 5b).

    Fix: tile the partition axis by 128 (nl.tile_size.pmax), or fold part of a free axis onto
    the partitions (partition vectorisation).
    """

    id = "underused-partitions"
    version = "2"
    severity = Severity.low
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n",
              inputs={"a": ((512, 64), "float32")}),
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n", inputs={"a": ((64, 64), "float32")}),
        # full tiles in a loop, then the unavoidable remainder tile of 44 rows
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(2):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n"
              "    r = nl.load(a[256:300, :])\n", inputs={"a": ((300, 64), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(16):\n        x = nl.load(a[i * 32:(i + 1) * 32, :])\n",
                inputs={"a": ((512, 64), "float32")}, line=6),
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name != "nl.load":
            return
        src = call.arg(0, "src")
        view = self.ctx.value(src)
        base = self.ctx.value(src.value) if isinstance(src, cst.Subscript) else view
        if not isinstance(view, Tensor) or not isinstance(base, Tensor) or not base.shape:
            return
        p, avail = view.partitions, base.shape[0]
        if p is None or avail is None or not 1 < p < P_MAX or avail < P_MAX or view.pdim != 0:
            return
        if len(base.shape) == len(view.shape or ()) and view.shape and view.shape[0] != p:
            return
        walk = self.ctx.deps(src.slice[0].slice)[0] if isinstance(src, cst.Subscript) and src.slice else frozenset()
        trips = [lp.trip or 2 for lp in call.loops if lp.id in walk]
        if not trips or max(trips) < 2:  # no loop steps through the rows: a one-off (remainder) tile
            return
        self.report(call.node, f"{call.name} fills {p} of 128 partitions although the source has {avail} rows",
                    metrics={"partitions": p, "available_partitions": avail})
