"""What-if estimates: re-run the cost model with one finding's fix applied to the trace.

Each candidate names the kernel line it is about, the change (as `Edits` of the scheduler: drop
or rescale some instructions, lift a loop's barrier) and what the change means in bytes or
cycles. Candidates come from the trace itself (reloaded HBM bytes, small transfers, fp32 matmul
operands, partially used partitions) and from the static rules' findings passed in as hints
(`(rule id, first line, last line)`): a hoistable load, a sequential_range without a dependency,
`acc = acc + matmul`, an implicit transpose, a DMA transpose in a loop. The estimate is re-run
for each; the largest savings are reported.

An "overlap" what-if (every engine and the DMA pool busy all the time: the time is the busiest
resource's) is always available; it says how much a better schedule alone could gain.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from evidence.nki.trace import TraceEvent
from evidence.nki.trace_items import human_bytes
from evidence.perf.estimate import CostEstimate, estimate
from evidence.perf.schedule import Change, Edits, dma_cost_ns
from evidence.perf.spec import HardwareSpec

_MATMUL_OPS = ("matmul", "nisa.nc_matmul")
_ELEMENTWISE_ENGINES = ("vector", "scalar", "gpsimd")
_DMA_TRANSPOSE_OPS = ("load_transpose2d", "nisa.dma_transpose")
# Findings whose what-if is always estimated and reported, gain or not: the rubric weighs them by what fixing them
# buys (evidence.corroborate labels the finding's `impact`), so "no gain" is evidence too. A DMA transpose costs
# time only on the critical path (REFERENCE §5.3 rule 10: in memory-bound code, where PE is idle). Small transfers
# (one candidate per kernel, all lines together) cost what their fixed per-transfer overhead adds to that path.
WEIGHED_FINDINGS = ("dma-transpose", "small-dma")
MAX_WEIGHED = 4
SMALL_DMA_BYTES = 2048  # per partition: REFERENCE §5.2 asks for >= 2 KiB, saturation from 4 KiB
BATCHED_DMA_BYTES = 4096


class WhatIf(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: str  # reload | fp32-operands | small-dma | partitions | sequential | psum-accumulate | implicit-transpose | dma-transpose | overlap
    source: str  # "trace" or "static:<rule id>"
    file: str | None = None
    line: int = 0
    change: str  # what is changed, in the kernel's terms
    time_s: float  # estimated time with the change
    baseline_s: float
    detail: str = ""
    metrics: dict[str, float] = {}

    @property
    def saving_s(self) -> float:
        return self.baseline_s - self.time_s

    @property
    def title(self) -> str:
        where = f"{self.file}:{self.line}: " if self.line else ""
        return (f"{where}{self.change}: estimated {_ms(self.baseline_s)} -> {_ms(self.time_s)}"
                + (f" ({self.baseline_s / self.time_s:.2f}x)" if self.time_s > 0 else ""))


def _ms(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s >= 1e-4 else f"{s * 1e6:.3g} us"


@dataclass
class Candidate:
    code: str
    source: str
    file: str | None
    line: int
    change: str
    edits: Edits
    detail: str = ""
    metrics: dict | None = None


def _by_line(events: list[TraceEvent]) -> dict[tuple, list[int]]:
    out: dict[tuple, list[int]] = defaultdict(list)
    for i, ev in enumerate(events):
        out[(ev.file, ev.line)].append(i)
    return out


def _bytes(ev: TraceEvent) -> int:
    return max(sum(ev.reads), sum(ev.writes))


def _reload_candidates(events, lines, spec: HardwareSpec, hinted: set[tuple[str | None, int]]) -> list[Candidate]:
    out = []
    sbuf_total = spec["sbuf_bytes_per_partition"] * 128
    for (file, line), idx in lines.items():
        dmas = [i for i in idx if events[i].engine == "dma" and events[i].redundant]
        if not dmas:
            continue
        edits = Edits()
        redundant = unique = 0
        for i in idx:
            ev = events[i]
            if ev.engine != "dma":
                continue
            moved = _bytes(ev)
            redundant += ev.redundant
            unique += moved - ev.redundant
            if ev.redundant >= moved:
                edits.events[i] = Change(drop=True)
            elif ev.redundant:
                edits.events[i] = Change(scale=1 - ev.redundant / moved)
        fits = unique <= sbuf_total
        detail = (f"{human_bytes(redundant)} of the HBM reads at this line re-load data loaded before; loaded once, the "
                  f"line moves {unique / 2**20:.3g} MiB" + ("" if fits else
                  f", more than SBUF holds ({sbuf_total / 2**20:.0f} MiB): blocking recovers only part of this"))
        out.append(Candidate(
            "reload", "static:hoistable-load" if {(None, line), (file, line)} & hinted else "trace", file, line,
            f"loading each byte at this line once (hoisting or blocking) removes {human_bytes(redundant)} of HBM reads",
            edits, detail, {"redundant_bytes": redundant, "unique_bytes": unique, "fits_sbuf": float(fits)}))
    return out


def _matmul_bf16_cycles(ev: TraceEvent) -> float:
    m = ev.shapes[-1][0] if ev.shapes[-1] else 1
    n = math.prod(ev.shapes[-1][1:]) if len(ev.shapes[-1]) > 1 else 1
    return float(max(min(64, m), n))


def _fp32_candidates(events, lines) -> list[Candidate]:
    out = []
    for (file, line), idx in lines.items():
        mm = [i for i in idx if events[i].op in _MATMUL_OPS and events[i].cycles >= 4 * _matmul_bf16_cycles(events[i]) - 1e-9]
        if mm:
            out.append(Candidate("fp32-operands", "trace", file, line,
                                 "bf16 instead of fp32 matmul operands (TensorE runs fp32 at a quarter rate)",
                                 Edits({i: Change(scale=0.25) for i in mm}),
                                 f"{len(mm)} matmuls with fp32 operands", {"matmuls": len(mm)}))
    return out


def _small_dma_candidates(events, lines) -> list[Candidate]:
    """One candidate for all transfers under 2 KiB per partition: batching loads alone leaves the
    stores of the same tiles small, so the lines are fixed together."""
    small_lines = {}
    for (file, line), idx in lines.items():
        small = [i for i in idx if events[i].engine == "dma"
                 and _bytes(events[i]) // max(events[i].partitions, 1) < SMALL_DMA_BYTES]
        if small:
            small_lines[(file, line)] = small
    total = sum(len(v) for v in small_lines.values())
    if total < 2:
        return []
    (file, line), _ = max(small_lines.items(), key=lambda kv: len(kv[1]))
    per_partition = min(_bytes(events[i]) // max(events[i].partitions, 1) for v in small_lines.values() for i in v)
    # the candidate is located in `file`; lines of other files (a helper module's DMAs) carry their file, since a
    # bare number would point into the wrong one
    where = ", ".join(f"{ln}" if f == file else f"{f}:{ln}"
                      for f, ln in sorted(small_lines, key=lambda k: (k[0] != file, k[0], k[1])))
    return [Candidate("small-dma", "trace", file, line,
                      f"batching the {total} transfers under {SMALL_DMA_BYTES // 1024} KiB per partition (lines {where}) "
                      f"to >= {BATCHED_DMA_BYTES // 1024} KiB per partition",
                      Edits({i: Change(run=BATCHED_DMA_BYTES) for v in small_lines.values() for i in v}),
                      f"transfers of as little as {per_partition} B per partition: per-buffer overhead dominates",
                      {"transfers": total, "bytes_per_partition": per_partition})]


def _partition_candidates(events, lines) -> list[Candidate]:
    out = []
    for (file, line), idx in lines.items():
        under = [i for i in idx if events[i].engine in _ELEMENTWISE_ENGINES and 0 < events[i].partitions <= 64]
        if len(under) < 2:
            continue
        parts = max(events[i].partitions for i in under)
        out.append(Candidate("partitions", "trace", file, line,
                             "packing the work of this line onto all 128 partitions",
                             Edits({i: Change(scale=events[i].partitions / 128) for i in under}),
                             f"{len(under)} instructions use at most {parts} of 128 partitions", {"partitions": parts}))
    return out


def _hint(h) -> tuple[str, int, int, str | None]:
    """(rule, first line, last line, file): a hint without a file matches those lines in any file."""
    return (h[0], h[1], h[2], h[3] if len(h) > 3 else None)


def _hint_candidates(events, lines, hints, recorder, spec: HardwareSpec) -> list[Candidate]:
    out = []
    loop_lines = {m[4] for m in (recorder.marks if recorder is not None else ()) if m[2] == "sequential"}
    for rule, first, last, hfile in map(_hint, hints):
        # a helper module's finding edits its own file's lines, never the kernel file's of the same number
        span = [(key, idx) for key, idx in lines.items() if first <= key[1] <= last and hfile in (None, key[0])]
        file = span[0][0][0] if span else None
        if rule == "sequential-without-dependency":
            lines_hit = {ln for ln in loop_lines if first <= ln <= last}
            if lines_hit:
                out.append(Candidate("sequential", f"static:{rule}", file, min(lines_hit),
                                     "affine_range instead of sequential_range (iterations overlap)",
                                     Edits(no_barrier_lines=lines_hit)))
        elif rule == "psum-accumulate-not-inplace":
            adds = [i for _, idx in span for i in idx if events[i].engine == "vector"]
            if adds:
                out.append(Candidate("psum-accumulate", f"static:{rule}", file, first,
                                     "accumulating with psum += matmul(...) instead of VectorE adds",
                                     Edits({i: Change(drop=True) for i in adds}), f"{len(adds)} VectorE adds removed"))
        elif rule == "matmul-implicit-transpose":
            mm = {}
            for _, idx in span:
                for i in idx:
                    ev = events[i]
                    if ev.op == "matmul" and len(ev.shapes) >= 2:
                        x = ev.shapes[0]
                        extra = max(x[0], min(64, math.prod(x[1:]) if len(x) > 1 else 1))
                        if ev.cycles > extra:
                            mm[i] = Change(scale=(ev.cycles - extra) / ev.cycles)
            if mm:
                out.append(Candidate("implicit-transpose", f"static:{rule}", file, first,
                                     "loading x transposed (transpose_x=True) so no TensorE transpose runs per matmul",
                                     Edits(mm)))
        elif rule == "load-transpose-in-loop":
            tr = [i for _, idx in span for i in idx if events[i].op in _DMA_TRANSPOSE_OPS]
            if tr:
                out.append(Candidate("dma-transpose", f"static:{rule}", file, first,
                                     "a plain load and a TensorE transpose instead of a DMA transpose",
                                     Edits({i: Change(scale=spec["dma_transpose_efficiency"]) for i in tr})))
    return out


def candidates(simulation, spec: HardwareSpec, hints: list[tuple] = ()) -> list[Candidate]:
    events = simulation.trace
    lines = _by_line(events)
    hinted = {(f, ln) for rule, a, b, f in map(_hint, hints) if rule == "hoistable-load" for ln in range(a, b + 1)}
    return (_reload_candidates(events, lines, spec, hinted) + _fp32_candidates(events, lines)
            + _small_dma_candidates(events, lines) + _partition_candidates(events, lines)
            + _hint_candidates(events, lines, list(hints), simulation.recorder, spec))


def _weight(c: Candidate, events: list[TraceEvent], spec: HardwareSpec) -> float:
    """Engine time (ns) a candidate's edits remove: a cheap ranking before re-estimating."""
    if c.edits.no_barrier_lines:
        return math.inf
    total = 0.0
    for i, ch in c.edits.events.items():
        ev = events[i]
        if ev.engine == "dma":
            used, piece, _ = dma_cost_ns(ev, spec)
            after = dma_cost_ns(ev, spec, ch.run)[1] if ch.run else piece
            cost, new = piece * used, after * used * ch.scale
        else:
            cost = ev.cycles / spec.clock_ghz(ev.engine)
            new = cost * ch.scale
        total += cost if ch.drop else cost - new
    return total


def overlap_whatif(base: CostEstimate) -> WhatIf:
    busy = base.engine_busy_s
    dma = sum(v for k, v in busy.items() if k.startswith("dma_"))
    best = max(busy["tensor"], busy["vector"], busy["scalar"], busy["gpsimd"], dma, busy["hbm"])
    return WhatIf(code="overlap", source="trace", change="perfect overlap of all engines and DMA queues",
                  time_s=max(best, 1e-12), baseline_s=base.time_s,
                  detail="the busiest resource's time: what scheduling alone (no less work) could reach")


def whatifs(simulation, spec: HardwareSpec, base: CostEstimate, hints: list[tuple[str, int, int]] = (),
            limit: int = 3, max_estimates: int = 6) -> list[WhatIf]:
    """The `limit` candidates that save the most, then the what-if of every finding the rubric weighs by its
    gain (WEIGHED_FINDINGS, at most MAX_WEIGHED, reported even when it gains nothing), then the overlap bound.
    Only the `max_estimates` candidates that remove the most engine time are re-estimated (each costs a
    schedule), besides the weighed ones."""
    results, weighed = [], []
    cands = sorted(candidates(simulation, spec, hints), key=lambda c: -_weight(c, simulation.trace, spec))
    for n, c in enumerate(cands):
        weighs = c.code in WEIGHED_FINDINGS
        if n >= max_estimates and not (weighs and len(weighed) < MAX_WEIGHED):
            continue
        est = estimate(simulation, spec=spec, edits=c.edits)
        w = WhatIf(code=c.code, source=c.source, file=c.file, line=c.line, change=c.change, time_s=min(
            est.time_s, base.time_s), baseline_s=base.time_s, detail=c.detail,
            metrics={k: float(v) for k, v in (c.metrics or {}).items()})
        if weighs:
            weighed.append(w)
        elif est.time_s < base.time_s * 0.999:
            results.append(w)
    results.sort(key=lambda w: w.time_s)
    return results[:limit] + weighed + [overlap_whatif(base)]
