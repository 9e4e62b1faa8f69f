"""large-buffer-outside-loop: per-iteration scratch declared outside its loop, or huge buffers."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import AssignInfo
from evidence.static.shapes import Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
MIN_BYTES = 512  # per partition: smaller scratch buffers cost little either way
SPILL_BYTES = 96 * 1024  # per partition: half of a partition's usable SBUF


def _is_loop_reduce(node: cst.BaseExpression) -> bool:
    func = node.func if isinstance(node, cst.Call) else None
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name == "loop_reduce"


class LargeBufferOutsideLoop(Rule):
    """Flags SBUF buffers allocated outside a loop but only used there as per-iteration scratch
    (rewritten whole at a fixed location each iteration), and single SBUF allocations over
    96 KiB per partition.

    A buffer declared outside the loop is one allocation shared by all iterations: the compiler
    must serialise them (a false write-after-write dependency) and cannot double-buffer, and a
    long-lived large buffer forces spills to HBM (REFERENCE §5.3 rule 2, §5.4; GCA046).

    Fix: allocate per-iteration tiles inside the loop body (`t = nl.ndarray(...)` or simply the
    result of nl.load); keep only data reused across iterations outside, sized to what is reused.
    """

    id = "large-buffer-outside-loop"
    severity = Severity.low
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        buf = nl.ndarray((128, 512), dtype=nl.float32)\n"
              "        buf[...] = nl.load(a[i * 128:(i + 1) * 128, :])\n", inputs={"a": ((512, 512), "float32")}),
        Valid(_HEAD + "import numpy as np\n@nki.jit\ndef k(a):\n    acc = nl.ndarray((128, 512), dtype=nl.float32)\n"
              "    for i in nl.affine_range(4):\n"
              "        acc[...] = nl.loop_reduce(nl.load(a[i * 128:(i + 1) * 128, :]), op=np.max, loop_indices=[i])\n",
              inputs={"a": ((512, 512), "float32")}),
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    buf = nl.ndarray((4, nl.par_dim(128), 512), dtype=nl.float32)\n"
              "    for i in nl.affine_range(4):\n        buf[i] = nl.load(a[i * 128:(i + 1) * 128, :])\n",
              inputs={"a": ((512, 512), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    buf = nl.ndarray((128, 512), dtype=nl.float32)\n    for i in nl.affine_range(4):\n"
                "        buf[...] = nl.load(a[i * 128:(i + 1) * 128, :])\n", inputs={"a": ((512, 512), "float32")}, line=5),
        _HEAD + "buf = nl.ndarray((128, 64 * 1024), dtype=nl.float32)\n",
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._allocs: dict[str, tuple[AssignInfo, Tensor]] = {}

    def on_assign(self, a: AssignInfo) -> None:
        t = a.value
        if a.kind == "bind" and isinstance(t, Tensor) and t.origin == "alloc" and t.buffer == "sbuf" and a.target:
            self._allocs[a.target] = (a, t)
            fb = t.free_bytes
            if fb is not None and fb > SPILL_BYTES:
                self.report(a.node, f"SBUF buffer '{a.target}' takes {fb} B per partition, over half of a partition's "
                            "usable SBUF: tiles live beside it may spill (a single allocation, not one outside a loop)",
                            metrics={"bytes_per_partition": fb, "limit": SPILL_BYTES}, labels={"pattern": "oversized"})
            return
        if a.kind != "store" or a.target not in self._allocs or not a.loops:
            return
        alloc, t = self._allocs[a.target]
        loop = a.loops[-1]
        if loop.id in (a.target_def_loops or ()) or loop.id in a.index_deps or a.target in a.names:
            return
        if any(a.target in x.names and x.start < a.start for x in (*loop.assigns, *loop.calls)):
            return  # read before the write: state carried across iterations, not scratch
        if _is_loop_reduce(a.value_node):
            return  # `buf[...] = nl.loop_reduce(...)` combines into buf: an accumulator, not scratch
        fb = t.free_bytes
        if fb is None or fb < MIN_BYTES:
            return
        self.report(alloc.node, f"'{a.target}' is scratch rewritten every iteration of the loop at line {loop.start} "
                    "but allocated outside it", metrics={"bytes_per_partition": fb, "loop_line": loop.start,
                                                        "trip_count": loop.trip}, labels={"pattern": "scratch_outside_loop"})
