"""Trace events (one per executed instruction) and their running aggregate.

Events are frozen slotted dataclasses: cheap to build in the hot path and safe to share. The
aggregate is updated as events arrive, so a report never re-walks the trace.

What a scheduler (the cost model, evidence.perf) needs beyond the event itself is kept next to
the events by the `Recorder` when it keeps them, positioned by event index:

- region keys `(allocation id, block)` read and written by each event (`rd`, `wr`); `block` is the
  tuple of integer indices on block dimensions (`buf[k]`), `()` the whole allocation; two keys
  overlap when one block is a prefix of the other;
- `forwards`: instructions that cost nothing but move data between regions (`buf[k] = nl.load(...)`
  binds the load's result to `buf[k]`; `acc += matmul(...)` accumulates in PSUM): the destination
  is ready when the sources are;
- `allocs` (on-chip allocation id -> buffer, bytes per partition or PSUM banks) and `frees`
  (when Python released an allocation), for capacity back-pressure;
- `marks`: each loop iteration's start (loop token, iterator kind, iteration index, loop header line).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evidence.nki.accumulation import Chains, Roundings
from evidence.nki.input_precision import InputPrecision

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
# free-axis reductions: their reduction length (elements in per element out) feeds the error model's bounds
REDUCE_OPS = frozenset({"sum", "max", "min", "mean", "prod", "var", "all", "nisa.tensor_reduce",
                        "nisa.tensor_scalar_reduce", "nisa.activation_reduce", "nisa.bn_stats"})
# Scans: the last output element of a row sums every element of the instruction's free size.
SCAN_OPS = frozenset({"nisa.tensor_tensor_scan"})
SMALL_DMA_BYTES_PER_PARTITION = 512
# A compute instruction with at most this many elements per partition is "tiny" (per-element work).
TINY_FREE_ELEMENTS = 4


def free_per_partition(engine: str, out_shape: tuple, elements: int, partitions: int) -> float:
    """Elements per partition an instruction processes. TensorE streams the moving operand's columns
    through all K partitions: its free size is the output's last axis (elements / K would count a
    [1, 512] ones-matmul as 4 per partition)."""
    return out_shape[-1] if engine == "tensor" and out_shape else elements / (partitions or 1)


@dataclass(frozen=True, slots=True)
class TraceEvent:
    op: str
    engine: str
    line: int
    shapes: tuple  # operand shapes, output last
    dtype: str  # output (or moved) dtype
    partitions: int
    elements: int
    reads: tuple[int, int, int]  # bytes read from (hbm, sbuf, psum)
    writes: tuple[int, int, int]  # bytes written to (hbm, sbuf, psum)
    cycles: float  # engine cycles (DMA: nanoseconds), from the op's cost rule
    flops: int = 0
    rd: tuple = ()  # region keys (allocation id, block) read
    wr: tuple | None = None  # region key written
    run: int = 0  # DMA: contiguous bytes per DMA buffer (descriptor), 0 when not a DMA
    redundant: int = 0  # DMA loads: bytes of HBM this transfer had already loaded before
    file: str | None = None  # kernel file of `line`


@dataclass(slots=True)
class Aggregate:
    """Running totals over the trace."""

    instr: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENGINES, 0))
    elements: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ENGINES, 0))
    cycles: dict[str, float] = field(default_factory=lambda: dict.fromkeys(ENGINES, 0.0))
    reads: list[int] = field(default_factory=lambda: [0, 0, 0])
    writes: list[int] = field(default_factory=lambda: [0, 0, 0])
    dma_count: int = 0
    dma_bytes: int = 0
    dma_small: int = 0
    dma_hist: dict[int, int] = field(default_factory=dict)  # power-of-two byte bucket -> transfers
    flops: int = 0
    partition_sum: int = 0  # over compute instructions, for utilisation
    compute_instr: int = 0
    free_sum: float = 0.0  # elements per partition, summed over compute instructions
    tiny_instr: int = 0  # compute instructions on <= TINY_FREE_ELEMENTS elements per partition
    # tiny instructions (compute or DMA) that take a small piece of a tensor whose free extent is larger
    # (dispatch.walks_free_axis): per-element work by choice, not because the data is that small
    tiny_walks: int = 0
    tiny_any: int = 0  # instructions of any engine (DMAs too) on <= TINY_FREE_ELEMENTS elements per partition
    dma_partition_sum: int = 0  # partitions moved, summed over DMAs (for bytes per partition)
    # (file, line) -> [engine of the first instruction, compute instructions, partition sum, min partitions,
    #                  free-elements sum, tiny instructions, DMAs, DMA bytes, redundant HBM bytes, DMA partitions]
    lines: dict[tuple, list] = field(default_factory=dict)
    dtypes: set = field(default_factory=set)  # dtypes the instructions produced or moved
    reduce_len: float = 0.0  # longest free-axis reduction (elements in per element out)

    def add(self, ev: TraceEvent) -> None:
        self.count(ev.op, ev.engine, ev.file, ev.line, ev.shapes, ev.dtype, ev.partitions, ev.elements, ev.reads,
                   ev.writes, ev.cycles, ev.flops, ev.redundant)

    def count(self, op: str, eng: str, file, line: int, shapes: tuple, dtype: str, partitions: int, elements: int,
              r: tuple, w: tuple, cycles: float, flops: int, redundant: int) -> None:
        """`add` from the event's fields: a run that keeps no trace builds no event."""
        self.instr[eng] += 1
        self.elements[eng] += elements
        self.cycles[eng] += cycles
        reads, writes = self.reads, self.writes
        reads[0] += r[0]
        reads[1] += r[1]
        reads[2] += r[2]
        writes[0] += w[0]
        writes[1] += w[1]
        writes[2] += w[2]
        self.flops += flops
        at = self.lines.get((file, line))
        if at is None:
            at = self.lines[(file, line)] = [eng, 0, 0, 1 << 30, 0.0, 0, 0, 0, 0, 0]
        if eng == "dma":
            moved = max(r[0] + r[1] + r[2], w[0] + w[1] + w[2])
            self.dma_count += 1
            self.dma_bytes += moved
            bucket = 1 << max(moved - 1, 0).bit_length()
            self.dma_hist[bucket] = self.dma_hist.get(bucket, 0) + 1
            if moved < SMALL_DMA_BYTES_PER_PARTITION * max(partitions, 1):
                self.dma_small += 1
            self.dma_partition_sum += partitions
            at[6] += 1
            at[7] += moved
            at[8] += redundant
            at[9] += partitions
        else:
            parts = partitions
            free = free_per_partition(eng, shapes[-1] if shapes else (), elements, parts)
            self.partition_sum += parts
            self.compute_instr += 1
            self.free_sum += free
            at[1] += 1
            at[2] += parts
            at[4] += free
            if parts < at[3]:
                at[3] = parts
            if free <= TINY_FREE_ELEMENTS:
                self.tiny_instr += 1
                at[5] += 1
            if op in REDUCE_OPS and len(shapes) >= 2:
                n_in, n_out = _free(shapes[0]), _free(shapes[-1])
                if n_in > n_out * self.reduce_len:
                    self.reduce_len = n_in / max(n_out, 1)
            elif op in SCAN_OPS and shapes:
                self.reduce_len = max(self.reduce_len, float(_free(shapes[0])))
        if dtype:
            self.dtypes.add(dtype)


def _free(shape: tuple) -> int:
    n = 1
    for s in shape[1:]:
        n *= s
    return n


class Recorder:
    """Collects events (unless told not to keep them), the side tables a scheduler needs, and the aggregate."""

    __slots__ = ("events", "agg", "keep", "forwards", "allocs", "frees", "marks", "chains", "roundings",
                 "input_precision")

    def __init__(self, keep: bool = True) -> None:
        self.events: list[TraceEvent] = []
        self.agg = Aggregate()
        self.keep = keep
        self.forwards: list[tuple[int, tuple, tuple]] = []  # (position, destination key, source keys)
        self.allocs: dict[int, tuple[str, int]] = {}  # on-chip allocation id -> (buffer, bytes/partition or banks)
        self.frees: list[tuple[int, int]] = []  # (position, allocation id) when an on-chip allocation was released
        self.marks: list[tuple[int, int, str, int, int]] = []  # (position, loop token, kind, iteration, line) per iteration
        self.chains = Chains()  # element-wise accumulation depth per region (kept in every mode: the error model's K)
        self.roundings = Roundings()  # low-precision roundings in sequence per region (the error model's bound)
        self.input_precision = InputPrecision()  # dtypes each argument's data is computed in (the device reference's)

    def add(self, ev: TraceEvent) -> None:
        if self.keep:
            self.events.append(ev)
        self.agg.add(ev)

    def record(self, op: str, engine: str, line: int, shapes: tuple, dtype: str, partitions: int, elements: int,
               reads: tuple, writes: tuple, cycles: float, flops: int, rd: tuple, wr, run: int, redundant: int,
               file) -> None:
        """`add(TraceEvent(...))`, building the event only when the trace is kept."""
        if self.keep:
            self.events.append(TraceEvent(op, engine, line, shapes, dtype, partitions, elements, reads, writes, cycles,
                                          flops, rd, wr, run, redundant, file))
        self.agg.count(op, engine, file, line, shapes, dtype, partitions, elements, reads, writes, cycles, flops,
                       redundant)
