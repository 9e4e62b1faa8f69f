"""CUDA -> NKI migration verdicts: the CUDA facts and the NKI analysis side by side, per aspect.

Each aspect is one `migration.*` item whose labels carry the `verdict`, a `cuda` summary and an
`nki` summary, so a reviewer (or drafter) sees both sides and the rule that decided. The mapping
follows REFERENCE §6: threads become tiles on 128 partitions, shared-memory tiles become SBUF
tiles, warp/block reductions become free-axis reductions, atomics become PSUM accumulation or
explicit reductions; per-element loops, or one SPMD instance per CUDA block/row with 1-partition
tiles, replay the CUDA thread structure and are a surface port.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.static.cuda_model import CudaFacts
from evidence.static.engine import Analysis
from evidence.static.shapes import ITEMSIZE, LOW_PRECISION, REDUCE_CALLS, Tensor

MIGRATION_KINDS = {
    "migration.accumulation": "accumulation dtype, CUDA vs NKI (labels: verdict = preserved|narrowed|not_needed|unknown, "
                              "cuda, nki; not_needed when neither side accumulates, e.g. a transpose or a copy)",
    "migration.tiling": "CUDA shared-memory/thread-block tiling vs NKI SBUF tiling (labels: verdict = "
                        "restructured|surface|missing|not_needed, cuda, nki; not_needed when the CUDA entry stages "
                        "nothing in shared memory and the port's tiles span partitions)",
    "migration.atomics": "CUDA atomics and their NKI replacement (labels: verdict = replaced|missing|not_needed|unknown, cuda, nki)",
    "migration.thread_indexing": "CUDA thread indexing vs NKI tiles (labels: verdict = tile_level|thread_emulation, cuda, nki)",
    "migration.idioms": "CUDA idioms without an NKI equivalent and how the port handled them (labels: verdict = "
                        "handled|unhandled|none|unknown, cuda, nki, idiom:<name>)",
}
# Every migration item also carries `cuda_scope`: the CUDA functions compared (the manifest's
# cuda_entry kernel and the device functions it calls; every kernel of the file without an entry).
# When the CUDA source did not fully parse, not_needed/none become unknown (nothing found is no
# evidence of absence) and the CUDA summary names the unparsed lines.
_SEVERITY = {
    "preserved": Severity.info, "restructured": Severity.info, "replaced": Severity.info, "not_needed": Severity.info,
    "tile_level": Severity.info, "handled": Severity.info, "none": Severity.info, "unknown": Severity.low,
    "surface": Severity.medium, "thread_emulation": Severity.medium, "unhandled": Severity.medium,
    "narrowed": Severity.high, "missing": Severity.high,
}
_REDUCTIONS = REDUCE_CALLS | {"nisa.activation_reduce", "nisa.tensor_partition_reduce", "nisa.tensor_scalar_reduce",
                              "nisa.bn_stats", "nisa.tensor_tensor_scan", "nl.loop_reduce", "nl.all_reduce"}


@dataclass
class NkiSide:
    """What the migration verdicts need from the NKI analysis."""

    acc_dtypes: set[str]
    reductions: list[str]
    thread_emulation: int
    emulation: list[str]  # how each thread-emulation finding replays CUDA threads, with its line
    per_thread_loops: bool  # threads replayed by loops (not only one instance per row): barriers, shuffles lost
    tile_partitions: int  # largest known partition count of a loaded/computed tile
    n_loads: int
    atomic_like: list[str]
    device_print: bool
    kernel_span: tuple[int, int]
    matmuls: int = 0  # TensorE matmul calls: they accumulate in PSUM


def nki_side(a: Analysis) -> NkiSide:
    acc, reductions, atomic_like, parts, loads = set(), [], [], 0, 0
    for fn in a.functions:
        for c in fn.calls:
            t = c.tensor
            if c.name in _REDUCTIONS:
                reductions.append(c.name)
                if t is not None and t.dtype:
                    acc.add(t.dtype)
            if c.name in ("nl.atomic_rmw",) or c.has_kw("dst_rmw_op"):
                atomic_like.append(c.name)
            if c.name.startswith("nl.load"):
                loads += 1
            if t is not None and t.partitions is not None and t.buffer in ("sbuf", "psum"):
                parts = max(parts, t.partitions)
        for s in fn.assigns:
            tv = s.target_value
            accumulating = s.kind == "aug" or (s.target is not None and s.target in s.names and s.loops)
            if accumulating and isinstance(tv, Tensor) and tv.dtype:
                acc.add(tv.dtype)
                if s.kind == "aug" and isinstance(s.value, Tensor) and s.value.origin == "matmul":
                    atomic_like.append("psum += matmul")
    kernel = next((f for f in a.functions if f.is_kernel), a.functions[0] if a.functions else None)
    emulation = [_emulation(f) + f" (line {f.start})" for f in a.findings if f.rule in _EMULATION_RULES]
    loops = any(f.rule in _EMULATION_RULES and not f.labels.get("pattern", "").startswith("spmd_") for f in a.findings)
    return NkiSide(acc, reductions, len(emulation), emulation, loops, parts, loads, atomic_like,
                   any(c.name == "nl.device_print" for fn in a.functions for c in fn.calls),
                   (kernel.start, kernel.end) if kernel else (1, 1),
                   sum(1 for fn in a.functions for c in fn.calls if c.name in ("nl.matmul", "nisa.nc_matmul")))


_EMULATION_RULES = ("thread-emulation", "per-element-loop")


def _emulation(f) -> str:
    """How a finding replays CUDA threads, in words."""
    parts = int(f.metrics.get("tile_partitions", 1))
    pattern = f.labels.get("pattern")
    if pattern == "spmd_instance_per_row":
        return f"one SPMD instance per row with {parts}-partition tiles"
    if pattern == "spmd_instance_per_block":
        return f"one SPMD instance per CUDA block with {parts}-partition tiles"
    if f.rule == "per-element-loop":
        return f"a loop walking {int(f.metrics.get('tile_elements', 1))} element(s) per partition per instruction"
    return "per-element/per-row loop on 1-partition tiles"


_MATH = re.compile(r"(?:__\w+|atomic\w+|cuda\w+|printf|assert|min|max|abs|(?:f|h)?(?:sqrt|rsqrt|cbrt|exp|exp2|exp10|expm1|log|"
                   r"log2|log10|log1p|pow|max|min|abs|tanh|sinh|cosh|erf|erfc|sin|cos|tan|floor|ceil|round|rint|trunc|"
                   r"fma|fmod|div|rcp|isnan|isinf|signbit|copysign)f?|\w+_cast|sizeof|make_\w+)")


def _builtin_call(name: str) -> bool:
    """CUDA/C builtins, math functions, casts and member calls: not helpers whose body matters."""
    # Qualified names (cg::sync, wmma::mma_sync, std::max) are library calls.
    return "." in name or "->" in name or not re.fullmatch(r"[A-Za-z_]\w*", name) or bool(_MATH.fullmatch(name))


def _width(dtype: str) -> int:
    return ITEMSIZE.get(dtype, 4) * (2 if dtype in ("float32", "float64") else 1)


def migration_items(cuda: CudaFacts, a: Analysis, analyzer: str, cuda_entry: str | None = None) -> list[EvidenceItem]:
    """One item per aspect. `cuda_entry` (the manifest's) narrows the CUDA side to that kernel."""
    nki = nki_side(a)
    kernels = [k for k in cuda.kernels if cuda_entry is None or k.name == cuda_entry] or cuda.kernels
    # The CUDA side is the entry kernel(s) and the device functions they call: a file that also
    # holds a backward kernel, older kernel versions or a CPU reference says nothing about the
    # kernel that was ported (their atomics, shared arrays and launches are not the port's).
    scope = cuda.reachable([k.name for k in kernels])
    names = {k.name for k in kernels}
    cuda = replace(cuda, **{f: [e for e in getattr(cuda, f) if e.function in scope] for f in (
        "shared", "syncs", "atomics", "warp", "tensor_core", "accumulators", "loops", "other_idioms", "memory_updates")},
        launches=[e for e in cuda.launches if e.what in names])
    cuda_scope = ",".join(sorted(scope))
    # Helpers the compared kernels call but this file does not define (a common.h warpReduceSum):
    # their barriers, shuffles and atomics are invisible here, so the summary names them.
    defined = ({f.name.split("<")[0] for f in cuda.functions} | {f.name.split("::")[0] for f in cuda.functions}
               | cuda.type_names)
    external = sorted({c for fn in scope for c in cuda.calls.get(fn, ()) if c not in defined and not _builtin_call(c)})
    loc = Location(file=a.file, start_line=nki.kernel_span[0], end_line=nki.kernel_span[1])
    out: list[EvidenceItem] = []

    # Where the CUDA source did not fully parse, the absence of atomics, idioms or accumulators
    # is no evidence: those verdicts become unknown, with the reason in the CUDA summary.
    unparsed = ", ".join(f"{a}-{b}" for a, b in cuda.parse_errors)

    def emit(aspect: str, verdict: str, cuda_text: str, nki_text: str, title: str,
             extra: dict[str, str] | None = None, metrics: dict[str, float] | None = None) -> None:
        kind = "migration." + aspect
        if unparsed and verdict in ("not_needed", "none"):
            verdict = "unknown"
        if unparsed:
            cuda_text += f" (the CUDA source did not fully parse: lines {unparsed})"
        out.append(EvidenceItem(
            id=make_id(kind, a.file), kind=kind, analyzer=analyzer, severity=_SEVERITY[verdict],
            title=f"{aspect.replace('_', ' ')}: {verdict} ({title})", location=loc,
            detail=f"CUDA ({cuda.file}): {cuda_text}. NKI ({a.file}): {nki_text}.",
            labels={"verdict": verdict, "cuda": cuda_text, "nki": nki_text, "cuda_file": cuda.file,
                    "cuda_scope": cuda_scope, **(extra or {})},
            metrics=metrics or {},
        ))

    # Accumulation dtype.
    cuda_acc = sorted({e.labels["accumulator_dtype"] for e in cuda.accumulators})
    cuda_in = sorted({e.labels["input_dtype"] for e in cuda.accumulators})
    in_memory = sorted({e.what for e in cuda.memory_updates})
    cuda_text = (f"{'/'.join(cuda_acc)} accumulation of {'/'.join(cuda_in)} inputs" if cuda_acc else "no loop accumulators found"
                 + (f" (sums kept in memory: {', '.join(in_memory)})" if in_memory else ""))
    nki_text = (f"accumulators/statistics in {'/'.join(sorted(nki.acc_dtypes)) or 'unknown dtype'}"
                if nki.acc_dtypes or nki.reductions else "no accumulators or reductions")
    narrowed = [d for d in nki.acc_dtypes if d in LOW_PRECISION]
    if cuda_acc and (narrowed or any(f.rule == "low-precision-accumulator" for f in a.findings)):
        verdict = "narrowed"
    elif (cuda_acc and nki.acc_dtypes and "unknown" not in cuda_acc  # a template's accumulator type: not comparable
          and min(_width(d) for d in nki.acc_dtypes) >= max(_width(d) for d in cuda_acc)):
        verdict = "preserved"
    elif not (cuda_acc or cuda.memory_updates or cuda.atomics or cuda.warp or cuda.tensor_core
              or nki.acc_dtypes or nki.reductions or nki.matmuls):
        verdict = "not_needed"  # data movement or element-wise math on both sides: nothing to keep or narrow
    else:
        verdict = "unknown"
    emit("accumulation", verdict, cuda_text, nki_text, "accumulator dtype")

    # Thread indexing and tiling.
    uses = sum(sum(k.builtins.values()) for k in kernels)
    cuda_idx = f"{uses} threadIdx/blockIdx/blockDim uses in {', '.join(k.name for k in kernels) or 'no kernel'}"
    emulated = nki.thread_emulation > 0
    nki_idx = (f"CUDA threads replayed: {'; '.join(nki.emulation)}" if emulated
               else f"tiles of up to {nki.tile_partitions} partitions, no per-element loops or per-row instances")
    emit("thread_indexing", "thread_emulation" if emulated else "tile_level", cuda_idx, nki_idx, "threads vs tiles",
         metrics={"thread_emulation_loops": float(nki.thread_emulation), "max_tile_partitions": float(nki.tile_partitions)})
    smem = sum(e.value or 0 for e in cuda.shared)
    # Dynamic (`extern __shared__`) arrays all alias one region sized at launch: one mention, with
    # the launch's size expression, not one array per declaration.
    static = [e for e in cuda.shared if e.labels.get("dynamic") != "true"]
    dynamic = len(static) < len(cuda.shared)
    sizes = sorted({e.labels.get("shared_bytes", "0") for e in cuda.launches} - {"0"})
    # Arrays sized by template parameters or macros from headers have no known size: they are not 0 B.
    unsized = sum(1 for e in static if e.value is None)
    size_text = (f"{int(smem)} B" if not unsized else "size unknown" if unsized == len(static)
                 else f"at least {int(smem)} B ({unsized} of unknown size)")
    cuda_tile = (f"{len(static)} {'static ' if dynamic else ''}__shared__ array(s), {size_text}"
                 + (f", dynamic shared memory (launch size: {', '.join(sizes) or '?'})" if dynamic else "")
                 + f"; block of {next((int(e.value) for e in cuda.launches if e.value), '?')} threads")
    if nki.n_loads == 0:
        verdict = "missing"
    elif emulated or nki.tile_partitions <= 1:
        verdict = "surface"
    elif not cuda.shared:
        # One thread per row or element, no shared-memory staging: there is no CUDA tiling to
        # restructure, and "shared-memory tiling became SBUF tiling" would be a reason made up.
        verdict = "not_needed"
    else:
        verdict = "restructured"
    emit("tiling", verdict, cuda_tile, f"{nki.n_loads} load site(s), largest tile {nki.tile_partitions} partitions",
         "shared memory vs SBUF", metrics={"cuda_shared_bytes": float(smem)})

    # Atomics.
    atomics = sorted({e.what for e in cuda.atomics})
    if not atomics:
        verdict, nki_atom = "not_needed", "none needed"
    elif nki.atomic_like or nki.reductions:
        verdict, nki_atom = "replaced", ", ".join(sorted(set(nki.atomic_like + nki.reductions)))
    else:
        verdict, nki_atom = "missing", "no atomic_rmw, PSUM accumulation or reduction"
    emit("atomics", verdict, ", ".join(atomics) or "no atomics", nki_atom, "atomics")

    # Idioms without an NKI equivalent (REFERENCE §6).
    # An instance per row still reduces its row as a tile (barriers and shuffles map to nl.sum and
    # friends); only per-thread loops leave those idioms replayed rather than replaced.
    threads = nki.per_thread_loops
    idioms: dict[str, bool] = {}
    if cuda.warp:
        idioms["warp_shuffle"] = bool(nki.reductions) and not threads
    for scope, idiom in (("block", "block_barrier"), ("warp", "warp_sync"), ("fence", "memory_fence")):
        if any(e.labels.get("scope", "block") == scope for e in cuda.syncs):
            idioms[idiom] = not threads
    for e in cuda.other_idioms:
        idioms[e.what] = e.what == "printf" or not threads
    if any(e.what in ("atomicCAS", "atomicMin", "atomicMax", "atomicExch") for e in cuda.atomics):
        idioms["atomic_cas_minmax"] = bool(nki.reductions) and not threads
    verdict = "none" if not idioms else ("handled" if all(idioms.values()) else "unhandled")
    cuda_id = (", ".join(sorted(idioms)) or "none") + (
        f"; calls not defined in {cuda.file}: {', '.join(external)}" if external else "")
    nki_id = (f"reductions: {', '.join(sorted(set(nki.reductions)))}" if nki.reductions else "no NKI reductions") + (
        "; CUDA thread structure replayed per element" if threads else
        "; one SPMD instance per CUDA block/row" if emulated else "")
    emit("idioms", verdict, cuda_id, nki_id, "CUDA-only idioms",
         extra={**{f"idiom:{k}": ("handled" if v else "unhandled") for k, v in sorted(idioms.items())},
                **({"cuda_external_calls": ",".join(external)} if external else {})})
    return out
