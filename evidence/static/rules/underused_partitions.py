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
    axis has at least 128 rows.

    Vector, Scalar and GpSimd process all partitions in the same time as one: a 32-partition
    tile runs element-wise work at a quarter of the engine's throughput, and DMAs spread over
    fewer partitions (REFERENCE §5.2, §5.3 rule 5b).

    Fix: tile the partition axis by 128 (nl.tile_size.pmax), or fold part of a free axis onto
    the partitions (partition vectorisation).
    """

    id = "underused-partitions"
    severity = Severity.low
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n",
              inputs={"a": ((512, 64), "float32")}),
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n", inputs={"a": ((64, 64), "float32")}),
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
        self.report(call.node, f"{call.name} fills {p} of 128 partitions although the source has {avail} rows",
                    metrics={"partitions": p, "available_partitions": avail})
