"""Static findings checked against the simulation's trace, after every collector has run.

A static rule reads the source; the simulator ran it. Where a finding claims something the trace
measures, the finding gets a label `trace` = `confirmed` | `contradicted` | `unchecked` (no trace, or
the flagged code never issued an instruction), and a contradiction becomes an `evidence.conflict`
item citing both sides, for a reviewer to settle. Rubrics cap hard only on findings the trace does
not contradict. What each rule claims and how the trace answers it:

- `thread-emulation` (loop form) and `per-element-loop`: the compute instructions issued inside the
  flagged loop use few partitions / a tiny free size per instruction (`sim.line`). A `[1, N]` row
  broadcast to 128 partitions is contradicted: its compute runs on 128 partitions.
- `thread-emulation` (one SPMD instance per row or block): the kernel's mean partition use (`sim.trace`).
- `partition-over-128`, `psum-over-bank`, `matmul-operand-limits` ("the compiler rejects this"): the
  simulator enforces the same limits, so a line that executed while the simulation ran to the end
  contradicts the finding.

Precision findings (`low-precision-accumulator`, `unstable-variance`) are about dtype choices, which
the trace cannot contradict; they get a label `measured` = `shown` when an output's relative L2 error
exceeds half a unit roundoff of its dtype (more than the final rounding alone produces: about 0.4 of a
unit roundoff) or, for a matmul of contraction length K, the fp32 accumulation's 2^-24 sqrt(K);
`not_shown` when every output stays within that, `unchecked` without outputs. A rubric lowers
numerical correctness for such a finding only when the error shows. Each `sim.output` is labelled
`rounding` = `within` | `above` by the same test, a measured fact either way.

DMA transposes (`load-transpose-in-loop`) cost time only where the kernel waits on memory (reviewers
check "no DMA transposes in memory-bound code"): the finding is labelled `regime` with the cost
model's roofline regime (`memory-bound` | `compute-bound`, `unknown` without an estimate), and the
rubric weighs it only when the kernel is not compute-bound. The cost model also re-estimates every such finding
with its fix (`perf.whatif` code `dma-transpose`, at the finding's line, reported whatever it gains): the finding
is labelled `impact` = `negligible` when that fix gains under NEGLIGIBLE_SPEEDUP (the transpose is off the
critical path: no time is lost to it), `material` when it gains more, `unknown` without an estimate; the rubric
then takes it as one avoidable pattern, not as DMA transposes on the hot path.

Small transfers (`small-dma`) are measured by the trace too: `sim.dma_sizes` says whether small transfers are a
pattern of a few lines or most of the bytes, and the rubric weighs that verdict. A finding whose own lines issued
transfers under 512 B per partition again and again in the run is labelled `dma_sizes` with that verdict (`pattern` |
`mostly`), so the rubric does not count the same transfers twice, once from the source and once from the trace.
The cost model prices batching all of a kernel's small transfers at once (`perf.whatif` code `small-dma`, always
reported when there are any): every `small-dma` finding is labelled `whatif` = `minor` when that fix gains under
MATERIAL_TRANSFER_SPEEDUP, `material` from it, `none` without such a what-if; the performance criterion then takes
its point from the what-if alone.

A `shared-hbm-nested` finding in a helper function ("err_shared_hbm_must_in_kernel_level") is checked by the
simulator too, which stops with that error where the compiler would: when the run went to the end (no
`sim.error`, `sim.incomplete` or `sim.refused`), the task's arguments never reached the allocation (a branch
they do not take, such as nki-library's HBM-output path behind `output_in_sbuf`; the compiler traces only
what runs) or reached it legally, so the finding is lowered to low and labelled `trace` = `not_traced`, and
the rubric's caps skip it. A finding in a loop (the simulator checks nl loops, not the Python `range` of a
standalone kernel) or a `with`/`try`/`while` block is left as it is.

An `undocumented-nki-api` call (label `form` = `call`) is judged the same way: the simulator stops with
`undocumented_api` wherever such a call runs (a beta kernel), so after a completed run the call sat in a branch the
task never takes (`if use_fast_exp:` with a False default): it is lowered to low, labelled `trace` = `not_traced`,
and the rubric neither caps on it nor reads the criteria as unobserved (the run observed them). Imports of
undocumented names always run and are left as they are.

A `sim.output` outside the default element-wise tolerance on a few isolated elements (at most
ISOLATED_FRACTION of them, no NaN, Inf or unwritten element), while its relative L2 error is within the
dtype's bound and the error model finds every numerics trial of that output within expected variation
(or cannot judge it: label `bound` = `vacuous`, its decision bound past VACUOUS_BOUND on every trial),
is labelled `outliers` = `isolated` and lowered to medium: the error model and the element-wise rule
then agree that the output as a whole is right, and the item says which elements are not. A task that
states its own tolerance keeps its mismatch as stated.
"""

from __future__ import annotations

from collections.abc import Iterable

from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.nki.dtypes import significand_bits
from evidence.nki.trace_items import repeats_small_transfers

CORROBORATION_VERSION = "9"
CONFLICT_KIND = "evidence.conflict"
CONFLICT_DOC = ("a static finding the simulation's trace contradicts (labels: static and dynamic: the ids of the "
                "items on each side; rule; reason): a reviewer decides which is right")
# A loop whose compute instructions average at least this many partitions is not one-partition work.
BROAD_PARTITIONS = 64
_LIMIT_RULES = ("nki.partition-over-128", "nki.psum-over-bank", "nki.matmul-operand-limits")
CORROBORATED = ("nki.thread-emulation", "nki.per-element-loop", *_LIMIT_RULES)
MEASURED = ("nki.low-precision-accumulator", "nki.unstable-variance")
REGIME_CLAIMS = ("nki.load-transpose-in-loop",)
NESTED_SHARED_HBM = "nki.shared-hbm-nested"
UNDOCUMENTED_API = "nki.undocumented-nki-api"
# the scope of a nested shared_hbm allocation the simulator rejects wherever the compiler does: a helper function (a
# loop is checked for nl loops only, not for the Python `range` a standalone kernel unrolls while tracing)
_SIMULATOR_CHECKED_SCOPES = ("helper",)
# a run that stopped early leaves later code unexamined
_STOPPED = ("sim.error", "sim.incomplete", "sim.refused")
# Isolated outliers (see the module doc): at most this fraction of an output's elements; structured errors (a tile,
# a row band) are the error model's to find, and beyond it the verdict is no longer "within"
ISOLATED_FRACTION = 5e-3
# A fix the cost model prices under this speedup buys nothing measurable. Kept tight: the calibration set's
# all-transpose kernel, which reviewers put on the hot path, prices its fix at 1.03x (its transfers are small, so
# their fixed cost dominates the transpose's), and attention_tkg's transposed-K load at 1.00x
NEGLIGIBLE_SPEEDUP = 1.01
_IMPACT_WHATIFS = {"nki.load-transpose-in-loop": "dma-transpose"}
# From this speedup the rubric takes time for small transfers on the cost model's word (its `small-dma` what-if
# rule); under it the fix is headroom a reviewer calls small, and the static finding takes no point of its own
MATERIAL_TRANSFER_SPEEDUP = 1.3


class _Trace:
    """The parts of the bundle the checks read."""

    def __init__(self, items: list[EvidenceItem]) -> None:
        self.lines = {(i.location.file, i.location.start_line): i for i in items
                      if i.kind == "sim.line" and i.location is not None}
        self.summary = next((i for i in items if i.kind == "sim.trace"), None)
        self.completed = self.summary is not None and not any(i.kind == "sim.error" for i in items)
        # every line that issued anything has a sim.line item (they are capped at the busiest lines otherwise)
        self.all_lines = any(i.labels.get("lines") == "all" for i in self.lines.values())
        self.loops = {(i.location.file, i.location.start_line): i.location.end_line for i in items
                      if i.kind == "nki.loop" and i.location is not None}

    def span(self, file: str, start: int, end: int) -> list[EvidenceItem]:
        return [i for (f, line), i in self.lines.items() if f == file and start <= line <= end]

    def loop_span(self, finding: EvidenceItem) -> tuple[int, int]:
        loc = finding.location
        assert loc is not None
        first = int(finding.metrics.get("loop_line", loc.start_line))
        return first, max(self.loops.get((loc.file, first), loc.end_line), loc.end_line)


def _mean(lines: list[EvidenceItem], metric: str) -> tuple[float, float]:
    """(instruction-weighted mean of a per-line metric, compute instructions) over lines."""
    n = sum(i.metrics.get("instructions", 0) for i in lines)
    if not n:
        return 0.0, 0.0
    return sum(i.metrics.get(metric, 0) * i.metrics.get("instructions", 0) for i in lines) / n, n


def _verdict(item: EvidenceItem, trace: _Trace) -> tuple[str, str, list[str]]:
    """(verdict, reason, ids of the trace items it rests on)."""
    loc = item.location
    if trace.summary is None or loc is None:
        return "unchecked", "no simulation trace", []
    if item.kind == "nki.thread-emulation" and item.labels.get("pattern", "").startswith("spmd_"):
        parts = trace.summary.metrics.get("partition_utilisation", 0.0) * 128
        verdict = "confirmed" if parts < BROAD_PARTITIONS else "contradicted"
        return verdict, f"compute instructions use {parts:.0f} of 128 partitions on average", [trace.summary.id]
    if item.kind in ("nki.thread-emulation", "nki.per-element-loop"):
        start, end = trace.loop_span(item)
        lines = trace.span(loc.file, start, end)
        if item.kind == "nki.thread-emulation":
            parts, n = _mean(lines, "partitions_mean")
            if not n:
                return "unchecked", f"no compute instruction ran in lines {start}-{end}", []
            verdict = "confirmed" if parts < BROAD_PARTITIONS else "contradicted"
            return verdict, f"the {n:.0f} compute instructions of lines {start}-{end} use {parts:.0f} partitions on " \
                            "average", [i.id for i in lines if i.metrics.get("instructions")]
        tiny = sum(i.metrics.get("tiny_instructions", 0) for i in lines)
        n = sum(i.metrics.get("instructions", 0) for i in lines)
        if not n:
            return "unchecked", f"no compute instruction ran in lines {start}-{end}", []
        verdict = "confirmed" if tiny >= 0.5 * n and tiny >= 64 else "contradicted"
        return verdict, f"{tiny:.0f} of the {n:.0f} compute instructions of lines {start}-{end} are tiny " \
                        "(<= 4 elements per partition)", [i.id for i in lines if i.metrics.get("instructions")]
    # "the compiler rejects this": the simulator enforces the same limit
    ran = trace.span(loc.file, loc.start_line, loc.end_line)
    if not ran:
        return "unchecked", f"lines {loc.start_line}-{loc.end_line} issued no instruction in the simulation", []
    if trace.completed:
        return "contradicted", (f"the simulator, which enforces this limit, executed lines {loc.start_line}-"
                                f"{loc.end_line} and finished without error"), [i.id for i in ran]
    return "confirmed", "the simulation stopped with an error", [i.id for i in ran]


def _measured(outputs: list[EvidenceItem]) -> tuple[str, str]:
    """Whether the outputs show more error than their dtype's final rounding (see the module doc)."""
    if not outputs:
        return "unchecked", "no output compared with the reference"
    for o in outputs:
        # significant bits (with the implicit one) of the output's dtype: half a unit roundoff is 2**-(bits + 1)
        bits = significand_bits(o.labels.get("dtype", ""))
        rel = o.metrics.get("rel_l2")
        if bits is None or rel is None:
            continue
        # an fp32 accumulation over K terms (matmul contraction) adds about 2^-24 sqrt(K) of its own
        bound = max(2.0 ** -(bits + 1), 2.0 ** -24 * (o.metrics.get("reduction_length") or 0.0) ** 0.5)
        if rel > bound:
            return "shown", f"output {o.id} has relative L2 error {rel:.3g}, above what its {o.labels['dtype']} " \
                            f"rounding (and fp32 accumulation) gives ({bound:.3g})"
    return "not_shown", "every output is as close to the reference as its dtype's rounding allows"


def _matches_as_a_whole(verdict: EvidenceItem) -> bool:
    """The error model finds the output within expected variation, or cannot judge it at all (its bound is
    vacuous): the relative L2 error within the dtype's bound is then the evidence that it matches as a whole."""
    return verdict.labels.get("verdict") == "within" or verdict.labels.get("bound") == "vacuous"


def _isolated_outliers(output: EvidenceItem, verdicts: dict[str, EvidenceItem]) -> EvidenceItem | None:
    """`output` (a mismatching sim.output) relabelled as isolated outliers, or None (see the module doc)."""
    m = output.metrics
    if (m.get("matches", 1.0) or m.get("task_tolerance") or m.get("nan_count") or m.get("inf_count")
            or m.get("unwritten_count")):
        return None
    fraction, rel, bound = m.get("mismatch_fraction", 1.0), m.get("rel_l2"), m.get("rel_l2_bound")
    index = output.id.split(":", 1)[-1]
    verdict = verdicts.get(index)
    if not (0.0 < fraction <= ISOLATED_FRACTION and rel is not None and bound is not None and rel <= bound
            and verdict is not None and _matches_as_a_whole(verdict)):
        return None
    elements = int(m.get("elements", 0))
    outside = round(fraction * elements)
    judged = ("finds every trial of this output within expected variation for its dtypes"
              if verdict.labels.get("verdict") == "within" else "cannot judge it (its bound is vacuous)")
    detail = (f"{output.detail} The relative L2 error is within its bound ({rel:.3g} <= {bound:.3g}) and the error "
              f"model {judged} [{verdict.id}]: the output as a whole matches; these {outside} elements are isolated "
              f"outliers of the element-wise rule.")
    return output.model_copy(update={
        "severity": Severity.medium, "detail": detail,
        "title": f"Output {index} matches the reference except {outside} isolated elements of {elements} "
                 f"({fraction * 100:.2g}%)",
        "labels": {**output.labels, "outliers": "isolated"}})


def _not_executed(item: EvidenceItem, trace: _Trace) -> EvidenceItem | None:
    """A cost finding on lines the completed simulation of this task never issued (a branch its options do not
    take, such as a transposed-input path behind a layout flag): low, labelled `trace` = `not_executed`, and
    saying so; None when the lines ran or there is no completed trace listing every line that ran to tell."""
    loc = item.location
    if loc is None or not (trace.completed and trace.all_lines) or trace.span(loc.file, loc.start_line, loc.end_line):
        return None
    reason = f"lines {loc.start_line}-{loc.end_line} issued no instruction in the simulated run of this task"
    return item.model_copy(update={
        "severity": Severity.low, "title": f"{item.title} (not run for this task: {reason})",
        "labels": {**item.labels, "trace": "not_executed", "trace_reason": reason}})


def _shared_hbm_not_traced(item: EvidenceItem, trace: _Trace, stopped: bool) -> EvidenceItem | None:
    """A nested shared_hbm allocation the task's completed run never made (see the module doc): low, labelled
    `trace` = `not_traced`; None when the run stopped early, the scope is one the simulator does not check, or
    there is no trace."""
    if trace.summary is None or stopped or item.labels.get("scope") not in _SIMULATOR_CHECKED_SCOPES:
        return None
    reason = ("the simulation, which stops with err_shared_hbm_must_in_kernel_level where the compiler does, ran this "
              "task to the end: its arguments do not reach this allocation (the compiler traces only what runs)")
    return item.model_copy(update={
        "severity": Severity.low, "title": f"{item.title} (not reached by this task)",
        "labels": {**item.labels, "trace": "not_traced", "trace_reason": reason}})


def _undocumented_call_not_traced(item: EvidenceItem, trace: _Trace, stopped: bool) -> EvidenceItem | None:
    """A call of an undocumented `nl.*` / `nisa.*` name the task's completed run never executed (see the module doc):
    low, labelled `trace` = `not_traced`; None for an import (module code always runs), a run that stopped early or
    no trace."""
    if trace.summary is None or stopped or item.labels.get("form") != "call":
        return None
    reason = ("the simulation, which stops with undocumented_api where such a call runs (the compiler's tracer fails "
              "there), ran this task to the end: its arguments do not reach this call (the compiler traces only what "
              "runs)")
    return item.model_copy(update={
        "severity": Severity.low, "title": f"{item.title} (not reached by this task)",
        "labels": {**item.labels, "trace": "not_traced", "trace_reason": reason}})


def _measured_transfers(item: EvidenceItem, trace: _Trace, verdict: str | None) -> EvidenceItem:
    """`item` (a small-dma finding) labelled with the trace's verdict when its lines are in it (see the module doc)."""
    loc = item.location
    if verdict not in ("pattern", "mostly") or loc is None:
        return item
    if not any(repeats_small_transfers(m.get("dma_count", 0), m.get("dma_bytes", 0), m.get("dma_partitions_mean", 1.0))
               for m in (line.metrics for line in trace.span(loc.file, loc.start_line, loc.end_line))):
        return item
    return item.model_copy(update={"labels": {**item.labels, "dma_sizes": verdict}})


def _transfer_whatif(whatifs: dict[tuple, EvidenceItem]) -> str:
    """What the cost model says batching the kernel's small transfers gains: minor | material | none."""
    w = next((w for (code, _, _), w in whatifs.items() if code == "small-dma"), None)
    if w is None:
        return "none"
    return "material" if w.metrics.get("speedup", 1.0) >= MATERIAL_TRANSFER_SPEEDUP else "minor"


def _impact(item: EvidenceItem, whatifs: dict[tuple, EvidenceItem]) -> EvidenceItem:
    """`item` labelled with what the cost model says its fix gains (see the module doc)."""
    loc = item.location
    w = whatifs.get((_IMPACT_WHATIFS[item.kind], loc.file, loc.start_line)) if loc is not None else None
    if w is None:
        return item.model_copy(update={"labels": {**item.labels, "impact": "unknown"}})
    speedup = w.metrics.get("speedup", 1.0)
    if speedup >= NEGLIGIBLE_SPEEDUP:
        return item.model_copy(update={"labels": {**item.labels, "impact": "material"}})
    return item.model_copy(update={
        "title": f"{item.title} (off the critical path: the cost model estimates its fix at {speedup:.2f}x [{w.id}])",
        "labels": {**item.labels, "impact": "negligible"}})


def corroborate(items: Iterable[EvidenceItem], analyzer: str = f"corroboration@{CORROBORATION_VERSION}") -> list[EvidenceItem]:
    """The items with every corroborable static finding labelled, plus one conflict item per contradiction."""
    items = list(items)
    trace = _Trace(items)
    measured = _measured([i for i in items if i.kind == "sim.output"])
    verdicts = {i.id.split(":", 1)[-1]: i for i in items if i.kind == "numerics.verdict"}
    roofline = next((i for i in items if i.kind == "perf.roofline"), None)
    regime = roofline.labels.get("regime", "unknown") if roofline is not None else "unknown"
    whatifs = {(i.labels.get("code"), i.location.file, i.location.start_line): i for i in items
               if i.kind == "perf.whatif" and i.location is not None}
    sizes = next((i.labels.get("small_transfers") for i in items if i.kind == "sim.dma_sizes"), None)
    stopped = any(i.kind in _STOPPED for i in items)
    transfer_whatif = _transfer_whatif(whatifs)
    out: list[EvidenceItem] = []
    for item in items:
        if item.kind == "sim.output":
            verdict = _measured([item])[0]
            if verdict != "unchecked":  # the output's own verdict: within its dtype's rounding, or above it
                item = item.model_copy(update={"labels": {**item.labels,
                                                          "rounding": "within" if verdict == "not_shown" else "above"}})
            item = _isolated_outliers(item, verdicts) or item
        if item.kind in REGIME_CLAIMS:
            item = item.model_copy(update={"labels": {**item.labels, "regime": regime}})
            item = _not_executed(item, trace) or item
            if item.kind in _IMPACT_WHATIFS:
                item = _impact(item, whatifs)
        if item.kind == NESTED_SHARED_HBM:
            item = _shared_hbm_not_traced(item, trace, stopped) or item
        if item.kind == UNDOCUMENTED_API:
            item = _undocumented_call_not_traced(item, trace, stopped) or item
        if item.kind == "nki.small-dma":
            item = _measured_transfers(item, trace, sizes)
            item = item.model_copy(update={"labels": {**item.labels, "whatif": transfer_whatif}})
        if item.kind in MEASURED:
            out.append(item.model_copy(update={"labels": {**item.labels, "measured": measured[0],
                                                          "measured_reason": measured[1]}}))
            continue
        if item.kind not in CORROBORATED:
            out.append(item)
            continue
        verdict, reason, dynamic = _verdict(item, trace)
        out.append(item.model_copy(update={"labels": {**item.labels, "trace": verdict, "trace_reason": reason}}))
        if verdict == "contradicted":
            loc = item.location or Location(file="?", start_line=1, end_line=1)
            out.append(EvidenceItem(
                id=make_id(CONFLICT_KIND, item.id), kind=CONFLICT_KIND, analyzer=analyzer, severity=Severity.medium,
                title=f"{item.kind} at {loc} is contradicted by the simulation: {reason}",
                detail=f"Static: {item.title}. Trace: {reason}. One of the two analyzers misreads this code; the "
                       "finding caps nothing until a reviewer settles it.",
                location=item.location,
                labels={"static": item.id, "dynamic": ",".join(dynamic), "rule": item.kind, "reason": reason},
            ))
    return out
