"""Benchmark claims checked against the kernel itself: its bytes and FLOPs (physics) and the cost model.

For the claim's shapes (`shapes = "x[4096, 768], w[768]"` naming the kernel's inputs; the task's
shapes otherwise) the kernel is traced and estimated. Then, per claim:

- a latency below what the kernel's own HBM bytes need at the DMA engines' peak, or its FLOPs at
  the TensorE peak (the most generous documented per-core figures, x2 for a trn2 logical core of
  two physical cores), is physically impossible: `below_physical_bound` (critical);
- a claimed bandwidth or TFLOPS above those peaks likewise (`above_physical_peak`); a bandwidth
  above the sustained per-core roof but under the peak is `above_sustained_roof` (medium);
- a latency, bandwidth or TFLOPS more than 3x away from the estimate in either direction is
  `faster_than_model` / `slower_than_model` (medium): the model is validated to within 1.5x;
- a speedup is checked against the estimates of both kernels when the submission has the baseline
  kernel (`[baseline]` in the manifest): `speedup_far_from_model` beyond 3x either way;
- otherwise `consistent_with_model` (info), with the ratio, which supports a high score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.perf.analysis import PerfResult
from evidence.perf.claims import Claim, ClaimsFile
from evidence.perf.items import fmt_time
from evidence.submission import KernelSpec, Submission

CLAIM_CHECK_KINDS = {
    "perf.claim": "a benchmark claim checked against the kernel's own HBM bytes and FLOPs (physically impossible "
                  "figures) and against the cost model's estimate (more than 3x away), or found consistent with both",
}
MODEL_FACTOR = 3.0
_SHAPE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\[\s*([0-9][0-9,\s]*)\]")


@dataclass
class ClaimContext:
    submission: Submission
    perf: PerfResult  # the kernel at the task's shapes
    run: Callable[[Submission], PerfResult | None]  # trace-only estimate of another configuration


def claim_shapes(claim: Claim, submission: Submission) -> dict[str, tuple[int, ...]] | None:
    """The input shapes a claim states, when they name the kernel's tensor inputs (None otherwise)."""
    if not claim.shapes:
        return None
    found = {name: tuple(int(d) for d in dims.replace(" ", "").split(",") if d) for name, dims in _SHAPE.findall(claim.shapes)}
    tensors = {i.name for i in submission.manifest.inputs if i.is_tensor}
    if not found or not set(found) <= tensors:
        return None
    return found


def _with_shapes(submission: Submission, shapes: dict[str, tuple[int, ...]]) -> Submission:
    m = submission.manifest
    inputs = tuple(i.model_copy(update={"shape": shapes.get(i.name, i.shape)}) for i in m.inputs)
    return submission.model_copy(update={"manifest": m.model_copy(update={"inputs": inputs})})


def _with_kernel(submission: Submission, file: str, entry: str) -> Submission:
    m = submission.manifest
    kernel = KernelSpec(file=file, entry=entry, grid=m.kernel.grid)
    return submission.model_copy(update={"manifest": m.model_copy(update={"kernel": kernel})})


def _line(text: str, claim_id: str) -> int:
    for n, line in enumerate(text.splitlines(), 1):
        if f'"{claim_id}"' in line:
            return n
    return 1


class _Estimates:
    """Estimates per configuration, computed once each."""

    def __init__(self, ctx: ClaimContext) -> None:
        self.ctx = ctx
        self.cache: dict[tuple, PerfResult | None] = {}

    def at(self, shapes: dict | None, baseline: bool = False) -> PerfResult | None:
        sub = self.ctx.submission
        m = sub.manifest
        same = shapes is None or all(tuple(i.shape) == shapes.get(i.name, tuple(i.shape)) for i in m.inputs)
        key = (None if same else tuple(sorted(shapes.items())), baseline)
        if key not in self.cache:
            if key == (None, False):
                self.cache[key] = self.ctx.perf
            else:
                variant = sub if same else _with_shapes(sub, shapes)
                if baseline:
                    variant = _with_kernel(variant, m.baseline.file, m.baseline.entry)  # type: ignore[union-attr]
                self.cache[key] = self.ctx.run(variant)
        return self.cache[key]


def _check(claim: Claim, perf: PerfResult, target: str, device: str) -> list[tuple[str, Severity, str, dict]]:
    est, roofs = perf.estimate, perf.roofs
    cores = 2 if target == "trn2" else 1  # a trn2 logical NeuronCore may span two physical cores (LNC=2)
    bytes_peak = max(roofs.dma_peak_gbps, roofs.hbm_gbps) * cores  # GB/s
    flops_peak = max(roofs.peak_fp8_tflops, roofs.peak_tflops) * cores  # TFLOPS
    out = []
    metrics = {"claimed": claim.value, "estimate_s": est.time_s, "hbm_bytes": float(est.hbm_bytes), "flops": float(est.flops)}
    if claim.metric == "latency_us":
        t = claim.value * 1e-6
        implied_gbps = est.hbm_bytes / t / 1e9 if t > 0 else float("inf")
        implied_tflops = est.flops / t / 1e12 if t > 0 else float("inf")
        metrics.update(implied_gbps=implied_gbps, implied_tflops=implied_tflops, ratio_to_estimate=t / est.time_s)
        if implied_gbps > bytes_peak:
            out.append(("below_physical_bound", Severity.critical,
                        f"the kernel moves {est.hbm_bytes / 1e6:.3g} MB through HBM: {claim.value:g} us would be "
                        f"{implied_gbps:,.0f} GB/s on {device}, above the {bytes_peak:,.0f} GB/s its DMA engines can reach",
                        metrics))
        elif implied_tflops > flops_peak:
            out.append(("below_physical_bound", Severity.critical,
                        f"the kernel does {est.flops / 1e9:.3g} GFLOP: {claim.value:g} us would be {implied_tflops:,.1f} "
                        f"TFLOPS, above the {flops_peak:g} TFLOPS TensorE peak", metrics))
        else:
            out += _vs_model(est.time_s, t, "latency", metrics, fmt=fmt_time)
    elif claim.metric == "gbps":
        achieved = est.hbm_bytes / est.time_s / 1e9
        metrics.update(estimated_gbps=achieved, ratio_to_estimate=claim.value / achieved if achieved else 0.0,
                       fraction_of_roof=claim.value / roofs.memory_gbps)
        if claim.value > bytes_peak:
            out.append(("above_physical_peak", Severity.critical,
                        f"{claim.value:g} GB/s is above the {bytes_peak:,.0f} GB/s the DMA engines of {device} can reach",
                        metrics))
        elif claim.value > roofs.memory_gbps:
            out.append(("above_sustained_roof", Severity.medium,
                        f"{claim.value:g} GB/s is above the {roofs.memory_gbps:g} GB/s sustained per-core roof "
                        f"({claim.value / roofs.memory_gbps:.0%})", metrics))
        elif achieved:
            out += _vs_model(achieved, claim.value, "bandwidth", metrics, fmt=lambda v: f"{v:.3g} GB/s")
    elif claim.metric == "tflops":
        achieved = est.achieved_tflops
        metrics.update(estimated_tflops=achieved, ratio_to_estimate=claim.value / achieved if achieved else 0.0)
        if claim.value > flops_peak:
            out.append(("above_physical_peak", Severity.critical,
                        f"{claim.value:g} TFLOPS is above the {flops_peak:g} TFLOPS TensorE peak", metrics))
        elif achieved:
            out += _vs_model(achieved, claim.value, "throughput", metrics, fmt=lambda v: f"{v:.3g} TFLOPS")
    return out


def _vs_model(estimated: float, claimed: float, what: str, metrics: dict, fmt) -> list:
    """Claimed time (or rate) against the estimate: beyond MODEL_FACTOR either way is a finding."""
    if what == "latency":
        ratio = estimated / claimed  # > 1: the claim is faster than the model
    else:
        ratio = claimed / estimated
    if ratio > MODEL_FACTOR:
        return [("faster_than_model", Severity.medium,
                 f"claimed {what} {fmt(claimed)} is {ratio:.1f}x better than the cost model's {fmt(estimated)} "
                 f"(validated within 1.5x)", metrics)]
    if ratio < 1 / MODEL_FACTOR:
        return [("slower_than_model", Severity.medium,
                 f"claimed {what} {fmt(claimed)} is {1 / ratio:.1f}x worse than the cost model's {fmt(estimated)}: "
                 "the measurement may include host or launch overhead", metrics)]
    return [("consistent_with_model", Severity.info,
             f"claimed {what} {fmt(claimed)} is within {MODEL_FACTOR:g}x of the cost model's {fmt(estimated)}", metrics)]


def _speedup(claim: Claim, kernel: PerfResult, base: PerfResult) -> list:
    predicted = base.estimate.time_s / kernel.estimate.time_s
    metrics = {"claimed": claim.value, "predicted_speedup": predicted, "estimate_s": kernel.estimate.time_s,
               "baseline_estimate_s": base.estimate.time_s, "ratio_to_estimate": claim.value / predicted}
    ratio = claim.value / predicted
    if ratio > MODEL_FACTOR or ratio < 1 / MODEL_FACTOR:
        return [("speedup_far_from_model", Severity.medium,
                 f"claimed speedup {claim.value:g}x, but the cost model estimates the baseline kernel at "
                 f"{fmt_time(base.estimate.time_s)} and this one at {fmt_time(kernel.estimate.time_s)}: {predicted:.2f}x",
                 metrics)]
    return [("consistent_with_model", Severity.info,
             f"claimed speedup {claim.value:g}x is within {MODEL_FACTOR:g}x of the estimated {predicted:.2f}x", metrics)]


def claim_items(claims: ClaimsFile, ctx: ClaimContext, analyzer: str) -> list[EvidenceItem]:
    sub = ctx.submission
    m = sub.manifest
    file = m.claims.file  # type: ignore[union-attr]
    text = sub.files[file]
    estimates = _Estimates(ctx)
    items = []
    for claim in claims.claim:
        method = claims.effective_method(claim)
        shapes = claim_shapes(claim, sub)
        perf = estimates.at(shapes)
        if perf is None:
            continue
        device = method.device or m.task.target
        if claim.metric == "speedup":
            if m.baseline is None:
                continue
            base = estimates.at(shapes, baseline=True)
            findings = _speedup(claim, perf, base) if base is not None else []
        else:
            findings = _check(claim, perf, m.task.target, device)
        line = _line(text, claim.id)
        where = "the claim's shapes" if shapes else "the task's shapes"
        for code, severity, message, metrics in findings:
            items.append(EvidenceItem(
                id=make_id("perf.claim", claim.id, code), kind="perf.claim", analyzer=analyzer, severity=severity,
                title=f"Claim {claim.id}: {message}",
                detail=f"estimated at {where} on {perf.estimate.target}: {fmt_time(perf.estimate.time_s)}",
                location=Location(file=file, start_line=line, end_line=line),
                metrics={k: float(v) for k, v in metrics.items()},
                labels={"code": code, "claim": claim.id, "metric": claim.metric, "shapes": "claim" if shapes else "task"},
            ))
    return items
