"""Evidence items from a cost-model result: the estimate, the roofline point, the bottleneck, what-ifs.

Items carry kinds, labels, metrics, severities and locations only; which criteria they inform is
the rubric's business (`evidence_kinds` and evidence rules in rubrics/*.toml).
"""

from __future__ import annotations

from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.perf.analysis import PerfResult

PERF_KINDS = {
    "perf.estimate": "cost-model estimate of the kernel's time on the target: engine and DMA-queue busy time, MFU, MBU, "
                     "and roofline_efficiency (the roofline lower bound over the estimate)",
    "perf.roofline": "the kernel's point on the roofline: arithmetic intensity against the ridge point, achieved and "
                     "attainable TFLOPS, memory- or compute-bound",
    "perf.bottleneck": "the engine or DMA that carries most of the estimate's critical path, with the kernel line that "
                       "carries most of it",
    "perf.whatif": "the estimate re-run with one finding's fix applied to the trace (a hoisted load, bf16 operands, "
                   "batched DMAs, ...): the estimated time before and after",
    "perf.unavailable": "the kernel ran but the cost model could not price it (e.g. no hardware table for the "
                        "target): why, and how to supply one",
}
_ENGINE_NAMES = {"tensor": "TensorE", "vector": "VectorE", "scalar": "ScalarE", "gpsimd": "GpSimdE", "dma": "DMA"}


def fmt_time(s: float) -> str:
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} us"


def _loc(files: dict, file: str | None, line: int, default: Location | None) -> Location | None:
    if file and file in files and line >= 1:
        return Location(file=file, start_line=line, end_line=line)
    return default


def perf_items(result: PerfResult, analyzer: str, files: dict, kernel_loc: Location | None) -> list[EvidenceItem]:
    est, roofs = result.estimate, result.roofs
    kfile = kernel_loc.file if kernel_loc else "kernel"
    util = est.engine_utilisation
    eng = est.bottleneck
    eng_name = _ENGINE_NAMES.get(eng, eng)
    items = [EvidenceItem(
        id=make_id("perf.estimate", kfile), kind="perf.estimate", analyzer=analyzer, location=kernel_loc,
        title=f"Estimated {fmt_time(est.time_s)} on {est.target} (bottleneck {eng_name}, {util.get(eng, 0):.0%} busy; "
              f"{est.roofline_efficiency:.0%} of the roofline bound)",
        detail=(f"cost model {est.model_version}, hardware table {est.spec_version}; MFU {est.mfu:.1%}, MBU {est.mbu:.1%}; "
                f"lower bound {fmt_time(est.lower_bound_s)} (FLOPs at peak, bytes at the memory roof, one load and one "
                "store latency); busy: " + ", ".join(f"{_ENGINE_NAMES.get(k, k)} {v:.0%}" for k, v in util.items() if v)),
        metrics={"time_s": est.time_s, "mfu": est.mfu, "mbu": est.mbu, "roofline_efficiency": est.roofline_efficiency,
                 "lower_bound_s": est.lower_bound_s, "instructions": float(est.instructions),
                 **{f"util_{k}": v for k, v in util.items()}},
        labels={"bottleneck": eng, "target": est.target, "spec_version": est.spec_version},
    )]
    regime = "compute-bound" if est.flops and est.arithmetic_intensity >= est.ridge_point else "memory-bound"
    items.append(EvidenceItem(
        id=make_id("perf.roofline", kfile), kind="perf.roofline", analyzer=analyzer, location=kernel_loc,
        title=(f"Roofline: {est.arithmetic_intensity:.3g} FLOP/B against a ridge point of {est.ridge_point:.0f} FLOP/B "
               f"({regime}); {est.achieved_tflops:.3g} of {est.attainable_tflops:.3g} attainable TFLOPS"
               if est.flops else f"Roofline: no matmul FLOPs; {est.hbm_bytes / 2**20:.3g} MiB of HBM traffic at "
               f"{est.mbu:.0%} of HBM bandwidth (memory-bound)"),
        metrics={"arithmetic_intensity": est.arithmetic_intensity, "ridge_point": est.ridge_point,
                 "achieved_tflops": est.achieved_tflops, "attainable_tflops": est.attainable_tflops,
                 "peak_tflops": roofs.peak_tflops, "hbm_gbps": roofs.hbm_gbps, "memory_gbps": roofs.memory_gbps,
                 "flops": float(est.flops), "hbm_bytes": float(est.hbm_bytes), "mfu": est.mfu, "mbu": est.mbu,
                 "roofline_efficiency": est.roofline_efficiency},
        labels={"regime": regime, "target": est.target},
    ))
    top_line, top_s = next(iter(est.per_line.items()), ("", 0.0))
    tfile, _, tline = top_line.rpartition(":")
    share = top_s / est.time_s if est.time_s else 0.0
    items.append(EvidenceItem(
        id=make_id("perf.bottleneck", eng), kind="perf.bottleneck", analyzer=analyzer,
        location=_loc(files, tfile, int(tline or 0), kernel_loc),
        title=f"Bottleneck: {eng_name}, {util.get(eng, 0):.0%} busy; {top_line} carries {share:.0%} of the critical path",
        detail="critical path by engine: " + ", ".join(f"{_ENGINE_NAMES.get(k, k)} {fmt_time(v)}"
                                                      for k, v in est.critical_path_s.items()),
        metrics={"utilisation": util.get(eng, 0.0), "line_share": share, "roofline_efficiency": est.roofline_efficiency,
                 **{f"path_{k}": v / est.time_s for k, v in est.critical_path_s.items() if est.time_s}},
        labels={"engine": eng, "line": top_line},
    ))
    for w in result.whatifs:
        speedup = w.baseline_s / w.time_s if w.time_s > 0 else 1.0
        severity = Severity.info if w.code == "overlap" else Severity.medium if speedup >= 1.5 else Severity.low
        items.append(EvidenceItem(
            id=make_id("perf.whatif", w.code, w.file, w.line or None), kind="perf.whatif", analyzer=analyzer,
            severity=severity, location=_loc(files, w.file, w.line, kernel_loc),
            title=f"What-if: {w.title}", detail=w.detail,
            metrics={"time_s": w.time_s, "baseline_s": w.baseline_s, "speedup": speedup, **w.metrics},
            labels={"code": w.code, "source": w.source},
        ))
    return items
