"""small-dma: repeated DMA transfers with a small per-partition payload."""

from __future__ import annotations

import math

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import dma_copy_load, store_target
from evidence.static.shapes import Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
_SA = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
MIN_BYTES = 512


class SmallDma(Rule):
    """Flags loads/stores inside loops that move fewer than 512 bytes per partition while a loop
    walks the free axis in those small chunks (so one wider transfer could carry them).

    Every DMA pays about 1.3 µs of setup, descriptor and semaphore cost; below ~256-512 B per
    partition the overhead dominates, and the DMA queues only saturate from 2-4 KiB per partition
    (512 fp32 / 1024 bf16 elements) (REFERENCE §5.2, §5.3 rule 9).

    Fix: widen the free dimension of each transfer (load whole rows or several tiles at once into
    a block-dimension SBUF buffer) and slice the resident tile instead.
    """

    id = "small-dma"
    version = "3"  # 2: a dma_copy from HBM is judged on its HBM (source) side; 3: a one-row HBM run spread over a
    # tile's partitions is judged on the tile
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n",
              inputs={"a": ((512, 512), "bfloat16")}),
        Valid(_HEAD + "@nki.jit\ndef k(a, b):\n    w = nl.load(b)\n", inputs={"a": ((512, 512), "bfloat16"), "b": ((128, 1), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n"
                "        for j in nl.affine_range(4):\n"
                "            x = nl.load(a[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])\n",
                inputs={"a": ((512, 512), "bfloat16")}, line=7),
        Invalid(_SA + "@nki.jit\ndef k(a):\n    for i in range(4):\n        for j in range(4):\n"
                "            x = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)\n"
                "            nisa.dma_copy(dst=x, src=a[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128])\n",
                inputs={"a": ((512, 512), "bfloat16")}, line=9),
    ]

    def on_call(self, call: CallInfo) -> None:
        load = dma_copy_load(self.ctx, call)  # a dma_copy from HBM: judge its source side
        if call.name in ("nl.load", "nl.load_transpose2d"):
            node = call.arg(0, "src")
        elif load is not None:
            node = load[0]
        elif call.name in ("nl.store", "nisa.dma_copy"):
            node = store_target(self.ctx, call)[0]
        else:
            return
        view = self.ctx.value(node)
        if not isinstance(view, Tensor) or not call.loops:
            return
        view = _landing_tile(self.ctx, call, node, view)
        # Only when a loop walks the free axis in small chunks can one transfer take more.
        walkers = _free_axis_loops(self.ctx, node, call)
        if not walkers:
            return
        trips = math.prod(lp.trip or 2 for lp in call.loops)  # a loop of unknown trip count is taken to repeat
        per_part = view.free_bytes
        if per_part is None or per_part >= MIN_BYTES or trips < 2:
            return
        # the count stated is what is known: a loop of unknown trip count may run once (it read "144x" for 72)
        known = math.prod(lp.trip or 1 for lp in call.loops)
        unknown = any(lp.trip is None for lp in call.loops)
        times = f"{known}x" if not unknown else f"at least {known}x" if known > 1 else "repeatedly"
        self.report(call.node, f"{call.name} moves {per_part} B per partition, {times} in a loop",
                    metrics={"bytes_per_partition": per_part, "partitions": view.partitions, "trip_count": known,
                             "min_bytes": MIN_BYTES}, labels={"trip_count": "lower_bound" if unknown else "exact"})


def _landing_tile(ctx, call: CallInfo, node, view: Tensor) -> Tensor:
    """The on-chip tile of a dma_copy whose HBM side reads as one row (`beta[b, nl.ds(s, 64)]`: the integer drops
    its axis and the view is padded to [1, 64]) while the tile spreads the same elements over its partitions ([64, 1]):
    each partition receives the tile's share (4 B there, not 256 B). Otherwise the HBM side itself."""
    if call.name != "nisa.dma_copy" or view.partitions != 1:
        return view
    dst, src = store_target(ctx, call)
    tile = ctx.value(src if node is dst else dst)
    if (isinstance(tile, Tensor) and (tile.partitions or 0) > 1 and tile.free_bytes is not None
            and tile.total_bytes == view.total_bytes):
        return tile
    return view


def _free_axis_loops(ctx, node, call: CallInfo) -> list:
    """Enclosing loops whose variable appears in the free-axis subscripts of the DMA's HBM side."""
    if not isinstance(node, cst.Subscript) or len(node.slice) < 2:
        return []
    deps: frozenset[int] = frozenset()
    for el in node.slice[1:]:
        deps |= ctx.deps(el.slice)[0]
    return [lp for lp in call.loops if lp.id in deps]
