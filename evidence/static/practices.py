"""Positive facts: the good practices a kernel shows, as citable evidence.

A high score needs reasons as much as a low one: the masks that cover the ragged tail, matmul
products accumulated in fp32 PSUM, statistics kept in fp32, fused and dedicated instructions,
full matmul tiles, low-precision TensorE operands. Each practice is one info item per kernel
file naming the lines that show it (in-scope functions only); which criteria it supports is the
rubric's business.
"""

from __future__ import annotations

from evidence.model import EvidenceItem, Location, make_id
from evidence.static.engine import Analysis
from evidence.static.model import CallInfo
from evidence.static.rulekit import DMA_CALLS
from evidence.static.rules.low_precision_accumulator import REDUCE_RES_CALLS, STAT_CALLS
from evidence.static.shapes import LOW_PRECISION, MATMUL_CALLS, Tensor

PRACTICE_KINDS = {
    "nki.masked_tail": "masks on loads/stores (and the compute between them) that cover a ragged last tile "
                       "(labels: lines; metrics: sites, masked_dmas)",
    "nki.psum_accumulation": "matmul products accumulated in place in an fp32 PSUM tile (acc += matmul) "
                             "(labels: lines; metrics: sites)",
    "nki.fp32_statistics": "reductions and statistics produced in fp32 (labels: lines, ops; metrics: sites, "
                           "on_low_precision_data)",
    "nki.fused_instructions": "fused or dedicated instructions: activation with scale/bias, activation_reduce, two-op "
                              "tensor_scalar, scalar_tensor_tensor, bn_stats/bn_aggr, tensor_tensor_scan, tensor_reduce, "
                              "nc_transpose (labels: lines, ops; metrics: sites)",
    "nki.matmul_tiles": "matmul operand tiles that fill TensorE: K = 128 on the partitions, stationary up to 128, "
                        "moving up to 512 with no larger tile possible (labels: lines; metrics: sites, moving_free, "
                        "stationary_free)",
    "nki.low_precision_operands": "TensorE fed with bf16/fp16/fp8 operands while products accumulate in fp32 PSUM "
                                  "(labels: lines, dtypes; metrics: sites)",
    "nki.platform_idioms": "idioms of the kernel's dialect it follows: affine_range for independent loops, shared_hbm "
                           "outputs created at kernel level, nisa instructions chosen explicitly (labels: idioms, lines; "
                           "metrics: sites, affine_loops, kernel_level_outputs, nisa_calls)",
}
_FUSED = {"nisa.activation_reduce", "nisa.scalar_tensor_tensor", "nisa.tensor_scalar_reduce", "nisa.bn_stats",
          "nisa.bn_aggr", "nisa.tensor_tensor_scan", "nisa.tensor_reduce", "nisa.nc_transpose"}


def _fused(call: CallInfo) -> bool:
    if call.name in _FUSED:
        return True
    if call.name == "nisa.activation":
        return call.has_kw("bias") or call.has_kw("scale") or call.has_kw("reduce_res")
    if call.name == "nisa.tensor_scalar":
        return call.has_kw("op1") or sum(a.keyword is None for a in call.node.args) >= 5
    return False


def _statistic(call: CallInfo) -> Tensor | None:
    """The tensor a reduction-like call produces (its result, or its reduce_res)."""
    if call.name in REDUCE_RES_CALLS and "reduce_res" in call.operands:
        t = call.operands["reduce_res"]
    elif call.name in STAT_CALLS:
        t = call.tensor
    else:
        return None
    return t if isinstance(t, Tensor) else None


def _double_rows(c, s: Tensor, m: Tensor) -> int:
    """2 for a double-row matmul (`perf_mode=` with [K, 2, M] and [K, 2, N] operands), else 0."""
    shapes = (s.shape or (), m.shape or ())
    return 2 if c.has_kw("perf_mode") and all(len(sh) == 3 and sh[1] == 2 for sh in shapes) else 0


def practice_items(a: Analysis, analyzer: str) -> list[EvidenceItem]:
    items: list[EvidenceItem] = []

    def add(kind: str, lines: list[int], title: str, metrics: dict[str, float] | None = None,
            labels: dict[str, str] | None = None) -> None:
        lines = sorted(set(lines))
        if not lines:
            return
        shown = ", ".join(str(x) for x in lines[:12]) + (" ..." if len(lines) > 12 else "")
        items.append(EvidenceItem(
            id=make_id(kind, a.file), kind=kind, analyzer=analyzer, title=f"{title} ({a.file} lines {shown})",
            location=Location(file=a.file, start_line=lines[0], end_line=lines[-1]),
            labels={"lines": ",".join(str(x) for x in lines), **(labels or {})},
            metrics={"sites": float(len(lines)), **(metrics or {})},
        ))

    calls = [c for fn in a.functions for c in fn.calls]
    assigns = [s for fn in a.functions for s in fn.assigns]

    masked = [c for c in calls if c.has_kw("mask")]
    masked_dmas = [c for c in masked if c.name in DMA_CALLS]
    if masked_dmas:
        add("nki.masked_tail", [c.start for c in masked], f"masks on {len(masked_dmas)} transfer(s) and "
            f"{len(masked) - len(masked_dmas)} other instruction(s) cover the ragged last tile",
            {"masked_dmas": float(len(masked_dmas))})

    add("nki.psum_accumulation", [s.start for s in assigns if s.kind == "aug" and isinstance(s.target_value, Tensor)
                                  and s.target_value.buffer == "psum" and s.target_value.dtype in ("float32", None)
                                  and isinstance(s.value, Tensor) and s.value.origin == "matmul"],
        "matmul products accumulate in place in fp32 PSUM (acc += matmul)")

    stats = [c for c in calls if (t := _statistic(c)) is not None and t.dtype == "float32"]
    on_low = [c for c in stats if any(isinstance(v, Tensor) and v.dtype in LOW_PRECISION for v in c.operands.values())]
    add("nki.fp32_statistics", [c.start for c in stats], "reductions and statistics produced in fp32"
        + (f" ({len(on_low)} of them from low-precision data)" if on_low else ""),
        {"on_low_precision_data": float(len(on_low))}, {"ops": ",".join(sorted({c.name for c in stats}))})

    fused = [c for c in calls if _fused(c)]
    add("nki.fused_instructions", [c.start for c in fused], "fused or dedicated instructions: "
        + ", ".join(sorted({c.name.split(".", 1)[1] for c in fused})), labels={"ops": ",".join(sorted({c.name for c in fused}))})

    underfilled = {f.start for f in a.findings if f.rule == "matmul-underfilled"}
    full, moving, stationary, low, dtypes, double = [], [], [], [], set(), []
    for c in calls:
        if c.name not in MATMUL_CALLS or c.matmul is None:
            continue
        s, m = c.matmul
        if (isinstance(s, Tensor) and isinstance(m, Tensor) and s.partitions == 128 and c.start not in underfilled
                and s.free_elems and m.free_elems):
            full.append(c.start)
            rows = _double_rows(c, s, m)  # [K, 2, F] operands: two K rows of 128, free size F
            double += [c.start] if rows else []
            stationary.append(s.free_elems // rows if rows else s.free_elems)
            moving.append(m.free_elems // rows if rows else m.free_elems)
        ops = [t.dtype for t in (s, m) if isinstance(t, Tensor) and t.dtype]
        if len(ops) == 2 and all(d in LOW_PRECISION for d in ops):
            low.append(c.start)
            dtypes.update(ops)
    add("nki.matmul_tiles", full, f"matmul tiles fill TensorE: K = 128 on the partitions"
        f"{' (two K rows per partition in the double-row matmuls)' if double else ''}, stationary "
        f"{max(stationary, default=0)}, moving {max(moving, default=0)}",
        {"moving_free": float(max(moving, default=0)), "stationary_free": float(max(stationary, default=0))})
    add("nki.low_precision_operands", low, f"TensorE operands in {'/'.join(sorted(dtypes))} with fp32 PSUM accumulation",
        labels={"dtypes": ",".join(sorted(dtypes))})

    kernels = [fn for fn in a.functions if fn.is_kernel]
    affine = [lp.start for fn in a.functions for lp in fn.loops if lp.kind == "affine_range"]
    outputs = [c.start for fn in kernels for c in fn.calls if c.name in ("nl.ndarray", "nl.zeros")
               and isinstance(c.value, Tensor) and c.value.buffer == "shared_hbm" and not c.loops and c.nested == 0]
    nisa = [c.start for c in calls if c.name.startswith("nisa.")]
    idioms = [name for name, found in (("affine_range loops", affine), ("kernel-level shared_hbm outputs", outputs),
                                       ("nisa instructions", nisa)) if found]
    if len(idioms) >= 2:
        add("nki.platform_idioms", affine + outputs + nisa, "dialect idioms: " + ", ".join(idioms),
            {"affine_loops": float(len(affine)), "kernel_level_outputs": float(len(outputs)), "nisa_calls": float(len(nisa))},
            {"idioms": ",".join(idioms)})
    return items
