"""thread-emulation: per-element or per-row loops, or one SPMD instance per row or block, that reproduce CUDA threads."""

from __future__ import annotations

import math

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import AssignInfo, CallInfo, FunctionInfo, LoopInfo
from evidence.static.rulekit import DMA_CALLS, ELEMENTWISE, P_MAX
from evidence.static.shapes import Sym, Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
_PID_CALLS = ("nl.program_id",)
# A program_id-indexed transfer narrower than this is a CUDA block's row, not an NKI tile.
_PID_MAX_PARTITIONS = 8


class ThreadEmulation(Rule):
    """Flags loops whose body moves or computes tiles of one partition (or one element) that move
    with the loop, and SPMD kernels whose `program_id`-indexed transfers are under 8 partitions
    (one instance per CUDA row: pattern `spmd_instance_per_row`) or under 128 partitions of a
    tensor with 128 rows to give (one instance per CUDA block, e.g. a 2-D grid of 16 x 16 blocks:
    `spmd_instance_per_block`): code standing in for CUDA threads and blocks.

    NKI's unit of work is a tile instruction over up to 128 partitions; a 1-partition tile uses
    1/128 of every engine and pays the full fixed cost (~64-100 cycles per instruction, ~1.3 µs
    per DMA) for each element or row. A grid with one instance per row does the same across
    instances: each runs a few tiny instructions and DMAs (REFERENCE §5.3 rule 5, §6).

    Fix: put 128 rows on the partition axis and process whole tiles (let each SPMD instance own a
    block of 128 rows); express per-element logic with index expressions, masks, `nl.where` or
    `tensor_tensor_scan`.
    """

    id = "thread-emulation"
    version = "2"
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n"
              "        y = nl.exp(x)\n", inputs={"a": ((512, 256), "float32")}),
        # One SPMD instance per block of 128 rows is the NKI way to use a grid.
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
              "    b = nl.program_id(0)\n    x = nl.load(a[b * 128:(b + 1) * 128, :])\n"
              "    nl.store(out[b * 128:(b + 1) * 128, :], value=nl.exp(x))\n    return out\n",
              inputs={"a": ((512, 256), "float32")}),
        # A batch index from program_id picks a whole [128, F] slab.
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    h = nl.program_id(axis=0)\n    x = nl.load(a[h])\n    y = nl.exp(x)\n",
              inputs={"a": ((4, 128, 64), "float32")}),
        # A [1, N] row loaded in every iteration and broadcast to the partitions does not walk rows.
        Valid(_HEAD + "@nki.jit\ndef k(a, g):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n"
              "        row = nl.load(g.reshape((1, 256)))\n        y = nl.multiply(x, nl.broadcast_to(row, shape=(128, 256)))\n",
              inputs={"a": ((512, 256), "float32"), "g": ((256,), "float32")}),
        # Column blocks of a one-row output, stored one block per iteration: there are no more rows.
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray((1, 2048), dtype=nl.float32, buffer=nl.shared_hbm)\n"
              "    for c in nl.affine_range(4):\n        t = nl.load(a[:, c * 512:(c + 1) * 512])\n"
              "        nl.store(out[:, c * 512:(c + 1) * 512], value=nl.sum(t, axis=0, keepdims=True))\n    return out\n",
              inputs={"a": ((128, 2048), "float32")}),
        # A 1-partition load that program_id does not index (a bias row) is not a thread.
        Valid(_HEAD + "@nki.jit\ndef k(a, bias):\n    b = nl.program_id(0)\n    w = nl.load(bias[0:1, :])\n"
              "    x = nl.load(a[b * 128:(b + 1) * 128, :])\n", inputs={"a": ((512, 256), "float32"), "bias": ((1, 256), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(512):\n        x = nl.load(a[i:i + 1, :])\n"
                "        y = nl.exp(x)\n", inputs={"a": ((512, 256), "float32")}, line=6),
        _HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(64):\n        for j in nl.affine_range(64):\n"
        "            x = nl.load(a[i, j])\n",
        # CUDA block-per-row port: one instance per row, a 1-partition tile each.
        Invalid(_HEAD + "@nki.jit\ndef k(x):\n    out = nl.ndarray((256, 1), dtype=nl.float32, buffer=nl.shared_hbm)\n"
                "    row = nl.program_id(0)\n    t = nl.load(x[row:row + 1, :])\n"
                "    s = nl.sum(t, axis=[1], keepdims=True)\n    nl.store(out[row:row + 1, :], value=s)\n    return out\n",
                inputs={"x": ((256, 1024), "float32")}, line=7),
        Invalid(_HEAD + "@nki.jit\ndef k(x, y):\n    t = nl.load(x[nl.program_id(0), :])\n    nl.store(y[nl.program_id(0), :], value=t)\n",
                inputs={"x": ((256, 1024), "float32"), "y": ((256, 1024), "float32")}, line=5),
        Invalid(_HEAD + "@nki.jit\ndef k(x):\n    r = nl.program_id(0)\n    c = r + 0\n    t = nl.load(x[nl.ds(c, 1), :])\n",
                inputs={"x": ((256, 1024), "float32")}, line=7),
        # a 2-D grid, one instance per 16 x 16 CUDA block
        Invalid(_HEAD + "@nki.jit\ndef k(x):\n    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
                "    bi = nl.program_id(0)\n    bj = nl.program_id(1)\n"
                "    t = nl.load(x[bi * 16:(bi + 1) * 16, bj * 16:(bj + 1) * 16])\n"
                "    nl.store(out[bi * 16:(bi + 1) * 16, bj * 16:(bj + 1) * 16], value=nl.exp(t))\n    return out\n",
                inputs={"x": ((512, 512), "float32")}, line=8),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._hits: dict[int, list[CallInfo]] = {}
        self._pid_names: set[str] = set()
        self._pid_hits: dict[int, list[tuple[CallInfo, Tensor]]] = {}
        self._loop_reported: set[int] = set()  # functions already flagged by the loop form
        self._row_dmas: set[int] = set()  # call nodes of DMAs that move one row per iteration

    # -- program_id provenance --------------------------------------------------------------
    def _reads_pid(self, node: cst.CSTNode | None) -> bool:
        if node is None:
            return False
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, cst.Name) and n.value in self._pid_names:
                return True
            if isinstance(n, cst.Call) and self.ctx.ev.api_name(n.func) in _PID_CALLS:
                return True
            stack.extend(n.children)
        return False

    def on_assign(self, assign: AssignInfo) -> None:
        # program_id and index arithmetic on it evaluate to an unknown integer (Sym): only those need a look.
        if (assign.kind == "bind" and assign.target and not assign.subscripted and isinstance(assign.value, Sym)
                and self._reads_pid(assign.value_node)):
            self._pid_names.add(assign.target)

    def _pid_tile(self, call: CallInfo) -> Tensor | None:
        """The HBM view of a DMA whose index reads program_id, when it is under 8 partitions (a CUDA
        row per instance) or under 128 partitions of a tensor that has 128 rows to give (a CUDA block
        per instance)."""
        if call.name == "nl.load":
            sides = [call.arg(0, "src")]
        elif call.name == "nl.store":
            sides = [call.arg(0, "dst")]
        elif call.name == "nisa.dma_copy":
            sides = [call.arg(None, "dst") or call.arg(0), call.arg(None, "src") or call.arg(1)]
        else:
            return None
        for node in sides:
            if not isinstance(node, cst.Subscript):
                continue
            view = self.ctx.value(node)  # cheap test first: only narrow views need the program_id walk
            if not (isinstance(view, Tensor) and view.partitions is not None and view.partitions < P_MAX):
                continue
            if view.partitions >= _PID_MAX_PARTITIONS:
                base = self.ctx.value(node.value)
                rows = base.shape[0] if isinstance(base, Tensor) and base.shape else None
                if rows is None or rows < P_MAX:
                    continue
            if any(self._reads_pid(el.slice) for el in node.slice):
                return view
        return None

    def _row_loops(self, call: CallInfo) -> set | None:
        """The loops that move the row (partition-axis) index of the DMA's HBM side (None: not visible). A loop
        that only moves the columns, such as one spreading the quarters of one row over four partition
        quadrants, walks no rows."""
        dst, src = call.arg(0, "dst"), call.arg(1, "src")
        side = {"nl.store": dst, "nisa.dma_copy": None}.get(call.name, call.arg(0, "src"))
        if call.name == "nisa.dma_copy":
            side = next((n for n in (call.arg(None, "src") or src, call.arg(None, "dst") or dst)
                         if isinstance(n, cst.Subscript)), None)
        if not isinstance(side, cst.Subscript) or not side.slice:
            return None  # not visible: keep the finding
        base = self.ctx.value(side.value)
        if isinstance(base, Tensor) and base.shape and base.shape[0] == 1:
            return set()
        return self.ctx.deps(side.slice[0].slice)[0] & {lp.id for lp in call.loops}

    # -- hooks ------------------------------------------------------------------------------
    def on_call(self, call: CallInfo) -> None:
        if call.name in DMA_CALLS and call.function is not None:
            view = self._pid_tile(call)
            if view is not None:
                self._pid_hits.setdefault(id(call.function), []).append((call, view))
        if not call.loops or (call.name not in DMA_CALLS and call.name not in ELEMENTWISE):
            return
        t = call.tensor
        if call.name == "nl.store":
            v = self.ctx.value(call.arg(1, "value"))
            t = v if hasattr(v, "partitions") else None
        if t is None or t.partitions != 1:
            return
        rows = self._row_loops(call) if call.name in DMA_CALLS else None
        if rows is not None and not rows:
            return  # a row of a one-row tensor, walked along its free axis: the data has no more rows
        if call.name not in DMA_CALLS and not self._on_walked_rows(call):
            return  # a one-row result (a column sum, a statistic row): its shape, not a thread
        # a DMA belongs to the innermost loop that moves its row: one stepping only its columns walks no rows
        moving = [lp for lp in call.loops if lp.id in call.deps and (rows is None or lp.id in rows)]
        if not moving:  # the same row in every iteration (a [1, N] vector to broadcast): not one row per step
            return
        if call.name in DMA_CALLS:
            self._row_dmas.add(id(call.node))
        self._hits.setdefault(moving[-1].id, []).append(call)

    def _on_walked_rows(self, call: CallInfo) -> bool:
        """Does a compute call read a row taken one at a time: a row-walking load's result, or a
        one-row slice of a tile whose row index moves with a loop?"""
        loops = {lp.id for lp in call.loops}
        for a in call.node.args:
            node = a.value
            if isinstance(node, cst.Name):
                b = self.ctx.lookup(node.value)
                node = b.node if b is not None else None
            if isinstance(node, cst.Call) and id(node) in self._row_dmas:
                return True
            if isinstance(node, cst.Subscript) and node.slice and self.ctx.deps(node.slice[0].slice)[0] & loops:
                return True
        return False

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
        if first.function is not None:
            self._loop_reported.add(id(first.function))
        known = all(lp.trip for lp in calls[0].loops)  # a loop of unknown trip count counts as 1 in `trips`
        runs = f"{trips} iterations" if known else (f"at least {trips} iterations" if trips > 1 else
                                                     "iterations of a loop of unknown trip count")
        self.report((first.start, first.end),
                    f"loop at line {loop.start} processes {what} per instruction ({len(calls)} calls, {runs})",
                    metrics={"trip_count": trips, "tile_partitions": 1, "tile_elements": elems, "n_ops": len(calls),
                             "loop_line": loop.start}, labels={"pattern": "loop"})

    def leave_function(self, function: FunctionInfo) -> None:
        hits = self._pid_hits.pop(id(function), None)
        if not hits or id(function) in self._loop_reported:
            return
        grid = self.ctx.options.get("grid") or ()
        instances = math.prod(int(g) for g in grid) if grid else None
        if instances is not None and instances < 2:  # a single instance is not a thread grid
            return
        first, view = hits[0]
        parts = max(v.partitions or 1 for _, v in hits)
        elems = view.free_elems
        grid_text = f"a grid of {instances} instances" if instances else "an SPMD grid"
        pattern = "spmd_instance_per_row" if parts < _PID_MAX_PARTITIONS else "spmd_instance_per_block"
        what = "row" if pattern == "spmd_instance_per_row" else "block"
        self.report((first.start, first.end),
                    f"one SPMD instance per CUDA {what}: {len(hits)} program_id-indexed transfer(s) of "
                    f"{parts} partition(s) each over {grid_text}",
                    metrics={"grid_instances": instances, "tile_partitions": parts, "tile_elements": elems,
                             "n_ops": len(hits)}, labels={"pattern": pattern})
