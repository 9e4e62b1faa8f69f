"""A list scheduler over the simulator's trace: when each instruction would start and end on a NeuronCore.

Resources: one in-order queue per compute engine (TensorE, VectorE, ScalarE, GpSimd); three DMA
queues (rings) by direction, `dma_load` (HBM to SBUF), `dma_store` (to HBM) and `dma_copy` (on chip
or HBM to HBM), in-order each, sharing the 16 DMA engines: a transfer over P partitions keeps
ceil(P/8) engines busy, and the engines are one pool whose free intervals any queue may use (the
engines round-robin between queues, so a store waiting for its data never holds up later loads).
HBM bandwidth caps a transfer's rate. An instruction starts when its engine is free and the data it
reads is written (read-after-write), when earlier
readers and writers of what it writes are done (write-after-read/-write, on chip only: HBM stores
to different places do not wait for each other), after the last barrier of a `sequential_range`
loop (an iteration starts when the previous one is complete; `affine_range` iterations overlap as
their data allows), and when SBUF/PSUM has room for a newly used allocation (back-pressure: an
allocation released in program order frees its space only when its last use ends).

Costs (REFERENCE §5.2, parameters in the hardware table):
- compute: the op's cycle count from the trace at the engine's clock, plus the static overhead when
  a VectorE/ScalarE instruction waits on the instruction just before it on the same engine;
- DMA: each engine moves its share of the bytes plus a fixed overhead per contiguous buffer
  (`dma_buffer_overhead_bytes`) at `dma_engine_gbps`; the ~1.3 us transfer setup is latency (the
  engines are free meanwhile), and HBM bandwidth caps the aggregate.

Each instruction remembers which earlier instruction decided its start, so the critical path can be
walked back from the end and its time attributed to kernel lines.
"""

from __future__ import annotations

import bisect
import heapq
import math
from dataclasses import dataclass, field

from evidence.nki.trace import TraceEvent
from evidence.perf.spec import HardwareSpec

COMPUTE = ("tensor", "vector", "scalar", "gpsimd")
_MEMSET_OPS = ("zeros", "zeros_like", "full", "memset", "nisa.memset")
_OVERHEAD_ENGINES = ("vector", "scalar")
_DMA_TRANSPOSE_OPS = ("load_transpose2d", "nisa.dma_transpose")


@dataclass(frozen=True)
class Change:
    """A what-if edit of one instruction: scale its cost, or drop it (its results are ready when its inputs are)."""

    scale: float = 1.0
    drop: bool = False
    run: int | None = None  # DMA: bytes per buffer to assume instead of the traced run


@dataclass
class Edits:
    """What-if edits applied while scheduling (the trace itself is never modified)."""

    events: dict[int, Change] = field(default_factory=dict)
    no_barrier_lines: set[int] = field(default_factory=set)  # sequential loops (by header line) run as affine


@dataclass
class Schedule:
    start: list[float]  # ns
    end: list[float]  # ns, when the result is available
    pred: list[int]  # the instruction whose end decided this start (-1: none)
    busy: dict[str, float]  # ns per compute engine, per DMA queue (dma_load, dma_store, dma_copy: engine-pool
    # time, i.e. the time all 16 DMA engines would take) and "hbm"
    makespan: float  # ns


class _Regions:
    """Last write and last read (time, instruction) per region key (allocation id, block)."""

    __slots__ = ("w", "r", "wall", "rall")

    def __init__(self) -> None:
        self.w: dict = {}
        self.r: dict = {}
        self.wall: dict = {}  # per allocation: the latest write to any block
        self.rall: dict = {}

    def _touching(self, table: dict, agg: dict, key) -> tuple[float, int]:
        uid, block = key
        if not block:
            return agg.get(uid, (0.0, -1))
        best = table.get(key, (0.0, -1))
        whole = table.get((uid, ()))
        if whole is not None and whole[0] > best[0]:
            best = whole
        for k in range(1, len(block)):
            pre = table.get((uid, block[:k]))
            if pre is not None and pre[0] > best[0]:
                best = pre
        return best

    def last_write(self, key) -> tuple[float, int]:
        return self._touching(self.w, self.wall, key)

    def last_read(self, key) -> tuple[float, int]:
        return self._touching(self.r, self.rall, key)

    @staticmethod
    def _note(table: dict, agg: dict, key, t: float, i: int) -> None:
        old = table.get(key)
        if old is None or t >= old[0]:
            table[key] = (t, i)
        a = agg.get(key[0])
        if a is None or t >= a[0]:
            agg[key[0]] = (t, i)

    def wrote(self, key, t: float, i: int) -> None:
        self._note(self.w, self.wall, key, t, i)

    def read(self, key, t: float, i: int) -> None:
        self._note(self.r, self.rall, key, t, i)


def _elided_memsets(events: list[TraceEvent], recorder) -> set[int]:
    """Memsets of PSUM tiles that matmuls accumulate into: the compiler makes the group's first matmul
    overwrite instead (an accumulation group, REFERENCE §3.5), so no instruction runs."""
    allocs = recorder.allocs
    acc = {dst[0] for _, dst, srcs in recorder.forwards
           if allocs.get(dst[0], ("",))[0] == "psum" and any(allocs.get(s[0], ("",))[0] == "psum" for s in srcs)}
    return {i for i, ev in enumerate(events) if ev.op in _MEMSET_OPS and ev.wr is not None and ev.wr[0] in acc}


def _aliases(recorder) -> dict[int, tuple]:
    """Fresh results bound into another region (`buf[k] = nl.load(...)`, PSUM `+=`): they live there."""
    out: dict[int, tuple] = {}
    allocs = recorder.allocs
    for _, dst, srcs in recorder.forwards:
        for uid, block in srcs:
            if not block and uid in allocs and uid not in out:
                out[uid] = dst
    return out


class _Capacity:
    """SBUF bytes per partition and PSUM banks in use; space of released allocations returns when their last use ends."""

    def __init__(self, spec: HardwareSpec) -> None:
        self.cap = {"sbuf": spec["sbuf_bytes_per_partition"], "psum": spec["psum_banks"]}
        self.used = {"sbuf": 0.0, "psum": 0.0}
        self.pending: dict[str, list] = {"sbuf": [], "psum": []}

    def acquire(self, buffer: str, size: float, t: float) -> tuple[float, int]:
        """The earliest time >= t at which `size` fits, and the instruction whose end frees the space (-1: none)."""
        pending, cap = self.pending[buffer], self.cap[buffer]
        while pending and pending[0][0] <= t:
            _, sz, _ = heapq.heappop(pending)
            self.used[buffer] -= sz
        pred = -1
        while self.used[buffer] + size > cap and pending:
            rt, sz, idx = heapq.heappop(pending)
            self.used[buffer] -= sz
            if rt > t:
                t, pred = rt, idx
        self.used[buffer] += size
        return t, pred

    def release(self, buffer: str, size: float, t: float, idx: int) -> None:
        heapq.heappush(self.pending[buffer], (t, size, idx))


class _Timeline:
    """Busy time of the DMA engine pool. A transfer takes the free time after its ready time, filling
    gaps left by transfers scheduled earlier (engines interleave queues round-robin), so one that
    must wait for its data never blocks later, independent ones."""

    __slots__ = ("starts", "ends", "owners")
    SCAN = 64  # gaps examined before running the rest after the latest interval

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []
        self.owners: list[int] = []

    def fill(self, t: float, d: float, owner: int) -> tuple[float, float, int]:
        """Consume `d` of free time from t on; (first slice start, end, instruction last waited for or -1)."""
        starts, ends, owners = self.starts, self.ends, self.owners
        n = len(starts)
        j0 = j = bisect.bisect_right(ends, t)  # intervals before j end by t
        cursor, remaining, first, pred, gaps = t, d, None, -1, 0
        while True:
            if j < n and starts[j] <= cursor:  # busy: skip to the interval's end
                cursor, pred = ends[j], owners[j]
                j += 1
                continue
            if first is None:
                first = cursor
            gap = (starts[j] if j < n else math.inf) - cursor
            gaps += 1
            if gap >= remaining:
                end = cursor + remaining
                break
            if gaps >= self.SCAN:  # too fragmented: run the rest after everything scheduled so far
                cursor, pred, j = ends[-1], owners[-1], n
                continue
            remaining -= gap
            cursor = starts[j]
        # everything in [first, end] is now busy: replace intervals j0..j-1 by one, merging neighbours
        lo = min(first, starts[j0]) if j0 < j else first
        del starts[j0:j], ends[j0:j], owners[j0:j]
        starts.insert(j0, lo)
        ends.insert(j0, end)
        owners.insert(j0, owner)
        if j0 + 1 < len(starts) and starts[j0 + 1] <= end:
            ends[j0], owners[j0] = ends[j0 + 1], owners[j0 + 1]
            del starts[j0 + 1], ends[j0 + 1], owners[j0 + 1]
        if j0 > 0 and ends[j0 - 1] >= starts[j0]:
            ends[j0 - 1], owners[j0 - 1] = ends[j0], owners[j0]
            del starts[j0], ends[j0], owners[j0]
        return first, end, pred


def dma_queue(ev: TraceEvent) -> str:
    """The DMA queue (ring) of a transfer, by direction."""
    if ev.reads[0] and ev.writes[1]:
        return "dma_load"
    if ev.writes[0] and not ev.reads[0]:
        return "dma_store"
    return "dma_copy"


def dma_cost_ns(ev: TraceEvent, spec: HardwareSpec, run: int | None = None) -> tuple[int, float, float]:
    """(engines used, ns each engine is busy, bytes through HBM) of one transfer."""
    nbytes = max(ev.reads[0] + ev.reads[1] + ev.reads[2], ev.writes[0] + ev.writes[1] + ev.writes[2])
    engines = int(spec["dma_engines"])
    used = max(1, min(engines, math.ceil(max(ev.partitions, 1) / spec["dma_partitions_per_engine"])))
    run = max(1, run if run is not None else (ev.run or nbytes))
    buffers = math.ceil(nbytes / run)
    bw = spec["dma_engine_gbps"]
    if ev.op in _DMA_TRANSPOSE_OPS:
        bw *= spec["dma_transpose_efficiency"]
    per_engine = (nbytes + buffers * spec["dma_buffer_overhead_bytes"]) / used / bw
    return used, per_engine, float(ev.reads[0] + ev.writes[0])


def schedule(events: list[TraceEvent], recorder, spec: HardwareSpec, edits: Edits | None = None) -> Schedule:
    edits = edits or Edits()
    n = len(events)
    start = [0.0] * n
    end = [0.0] * n
    pred = [-1] * n
    clocks = {e: spec.clock_ghz(e) for e in COMPUTE}
    overhead = spec["dependent_overhead_cycles"]
    engines = int(spec["dma_engines"])
    latency = spec["dma_fixed_latency_ns"]
    hbm_bw = spec["hbm_gbps"]
    busy: dict[str, float] = dict.fromkeys(COMPUTE, 0.0)
    pool = _Timeline()
    queue_start = {"dma_load": 0.0, "dma_store": 0.0, "dma_copy": 0.0}
    queue_last = dict.fromkeys(queue_start, -1)
    busy.update(dict.fromkeys(queue_start, 0.0), hbm=0.0)
    eng_free = dict.fromkeys(COMPUTE, 0.0)
    eng_last = dict.fromkeys(COMPUTE, -1)
    regions = _Regions()
    allocs = recorder.allocs if recorder is not None else {}
    alias = _aliases(recorder) if recorder is not None else {}
    elided = _elided_memsets(events, recorder) if recorder is not None else set()
    cap = _Capacity(spec)
    started: set[int] = set()
    last_use: dict[int, tuple[float, int]] = {}
    floor, floor_pred = 0.0, -1
    loop_pos: dict[int, int] = {}

    # side tables merged by position: forwards (0), frees (1), marks (2)
    side: list[tuple] = []
    freed_after: dict[int, list[int]] = {}  # position -> allocations Python released just before it
    released: set[int] = set()
    if recorder is not None:
        for pos, uid in recorder.frees:
            freed_after.setdefault(pos, []).append(uid)
        side = sorted([(p, 0, k, (dst, srcs)) for k, (p, dst, srcs) in enumerate(recorder.forwards)]
                      + [(p, 1, k, uid) for k, (p, uid) in enumerate(recorder.frees)]
                      + [(m[0], 2, k, m) for k, m in enumerate(recorder.marks)])
    si = 0
    for i in range(n + 1):
        while si < len(side) and side[si][0] <= i:
            _, what, _, payload = side[si]
            si += 1
            if what == 0:
                dst, srcs = payload
                best = regions.last_write(dst)
                for s in srcs:
                    w = regions.last_write(s)
                    if w[0] > best[0]:
                        best = w
                regions.wrote(dst, best[0], best[1])
            elif what == 1:
                uid = payload
                if uid in started and uid not in released:
                    t, idx = last_use.get(uid, (0.0, -1))
                    buf, size = allocs[uid]
                    cap.release(buf, size, t, idx)
            else:
                _, token, kind, _, line = payload
                if kind == "sequential" and line not in edits.no_barrier_lines:
                    prev = loop_pos.get(token)
                    if prev is not None and i > prev:
                        m = max(end[prev:i])
                        if m > floor:
                            floor, floor_pred = m, end.index(m, prev, i)
                    loop_pos[token] = i
        if i == n:
            break
        ev = events[i]
        change = edits.events.get(i)
        t, p = floor, floor_pred
        dep_t, dep_i = 0.0, -1
        for key in ev.rd:
            w = regions.last_write(key)
            if w[0] > dep_t:
                dep_t, dep_i = w
        wkeys = ()
        if ev.wr is not None:
            wkeys = (ev.wr, alias[ev.wr[0]]) if ev.wr[0] in alias and not ev.wr[1] else (ev.wr,)
            for key in wkeys:
                if key[0] in allocs:  # on chip: wait for earlier readers and writers of the region
                    for w in (regions.last_read(key), regions.last_write(key)):
                        if w[0] > dep_t:
                            dep_t, dep_i = w
        if dep_t > t:
            t, p = dep_t, dep_i
        if (change is not None and change.drop) or i in elided:
            start[i] = end[i] = t
            pred[i] = p
            _note(regions, last_use, ev, wkeys, t, i)
            continue
        # capacity for an allocation used for the first time
        for key in wkeys:
            uid = key[0]
            if uid in allocs and uid not in started and uid not in alias:
                started.add(uid)
                # `t = nl.load(...)` in a loop: Python releases the previous tile only after binding the
                # new one; unless this instruction reads it, its space is what the new tile reuses
                reads = {k[0] for k in ev.rd}
                for old in freed_after.get(i + 1, ()):
                    if old in started and old not in released and old not in reads:
                        released.add(old)
                        lt, li = last_use.get(old, (0.0, -1))
                        cap.release(allocs[old][0], allocs[old][1], lt, li)
                buf, size = allocs[uid]
                ct, cp = cap.acquire(buf, size, t)
                if ct > t:
                    t, p = ct, cp
        eng = ev.engine
        scale = change.scale if change is not None else 1.0
        if eng == "dma":
            used, piece, hbm_bytes = dma_cost_ns(ev, spec, change.run if change is not None else None)
            dur = max(piece * scale, hbm_bytes / hbm_bw * scale)  # HBM bandwidth caps the rate
            q = dma_queue(ev)
            if queue_start[q] > t:  # in order within the queue
                t, p = queue_start[q], queue_last[q]
            share = used / engines
            first, done, qp = pool.fill(t, dur * share, i)
            if done > t + dur * share:  # shared the engines with other transfers
                p = qp
            queue_start[q], queue_last[q] = first, i
            busy[q] += dur * share
            busy["hbm"] += hbm_bytes / hbm_bw * scale
            start[i] = first
            # a transfer on fewer engines takes its own time even when the pool has room
            end[i] = max(done, first + dur) + latency
        else:
            e_free = eng_free[eng]
            if e_free > t:
                t, p = e_free, eng_last[eng]
            dur = ev.cycles * scale / clocks[eng]
            if eng in _OVERHEAD_ENGINES and dep_i >= 0 and dep_i == eng_last[eng] and dep_t >= e_free:
                dur += overhead / clocks[eng]  # waits on the instruction just before it on this engine
            start[i] = t
            end[i] = t + dur
            eng_free[eng] = t + dur
            eng_last[eng] = i
            busy[eng] += dur
        pred[i] = p
        _note(regions, last_use, ev, wkeys, end[i], i)
    return Schedule(start, end, pred, busy, max(end) if end else 0.0)


def _note(regions: _Regions, last_use: dict, ev: TraceEvent, wkeys: tuple, t: float, i: int) -> None:
    for key in ev.rd:
        regions.read(key, t, i)
        last_use[key[0]] = (t, i)
    for key in wkeys:
        regions.wrote(key, t, i)
        last_use[key[0]] = (t, i)


def critical_path(s: Schedule) -> list[int]:
    """Instructions on the critical path, from the first to the one that ends last."""
    if not s.end:
        return []
    i = s.end.index(s.makespan)
    path = []
    seen = set()
    while i >= 0 and i not in seen:
        seen.add(i)
        path.append(i)
        i = s.pred[i]
    path.reverse()
    return path
