"""The "numerics" collector: the error model over several trials.

Trials, each a full simulation of the kernel and a run of its reference in sandboxed children
(evidence.nki.child_runs: the simulator's gate, jobs, sandbox and limits), with three references per
trial (float64, device-faithful, |inputs|; evidence.numerics.errormodel):

- the inputs' own distributions, with seeds 1..`seeds` (the manifest's `[numerics] seeds`, default 3;
  the simulator collector's own run uses seed 0);
- each extra distribution the task declares (`[numerics] distributions`: large, cancellation, mixed,
  ...), applied to every float input, seed 1;
- the affine iterations in reverse order (seed 1): a legal order for independent iterations, so an
  illegal loop-carried dependency shows as a changed result;
- the task's second problem size (`[numerics] shapes`), to show how the error grows with K.

One `numerics.verdict` per output: within expected variation / exceeds the bound by xN: defect /
cannot tell, with the spatial pattern of the mismatches, ULP errors, cosine (reported only) and
the recommended cross-platform tolerance; `numerics.growth` when a second size ran.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ClassVar

import numpy as np

from evidence.collector import Collector
from evidence.memo import memoized
from evidence.model import EvidenceItem, Location, Severity, make_id
from evidence.nki import dtypes
from evidence.nki.child_runs import ChildRuns
from evidence.numerics.errormodel import (
    U_FP32, VACUOUS_BOUND, Trial, TrialResult, Verdict, assess, combine, lowest_precision,
    recommended_tolerance,
)
from evidence.sandbox.config import SandboxConfig
from evidence.sandbox.outcome import ChildOutcome
from evidence.submission import InputSpec, NumericsSpec, Submission

NUMERICS_KINDS = {
    "numerics.verdict": "the error model's verdict on one output over several trials (seeds, input distributions, "
                        "affine iterations reversed): within expected variation, exceeds the dtype-aware bound by xN "
                        "(defect, with the spatial pattern of the mismatches), or cannot tell",
    "numerics.growth": "how the output's error grows between two problem sizes (reduction lengths K)",
}
_LIMITS = frozenset({"timeout", "cpu_limit", "memory_limit"})  # limits a trial at the same size would hit again
_STRUCTURED = ("last_partial_tile", "partition_band", "every_kth_row", "spmd_instance", "one_tile", "column_band")


class NumericsCollector(Collector):
    name = "numerics"
    version = "1"
    kinds: ClassVar[dict[str, str]] = NUMERICS_KINDS
    timeout_s: float = 120.0
    reference_timeout_s: float = 60.0
    memory_limit_bytes: int = 6 * 2**30
    sandbox: SandboxConfig = SandboxConfig()
    order_trial: bool = True  # run one trial with affine_range iterations reversed
    max_trials: int = 12
    parallel: int = 2  # trials whose child processes run at the same time
    _lock = threading.Lock()

    def applies(self, submission: Submission) -> bool:
        m = submission.manifest
        return (m.reference is not None and bool(m.inputs) and m.kernel.file.endswith(".py")
                and any(i.is_tensor for i in m.inputs))

    # --- trials ------------------------------------------------------------------------------
    def plan(self, submission: Submission) -> list[dict]:
        m = submission.manifest
        spec = m.numerics or NumericsSpec()
        specs = [i.model_dump() for i in m.inputs]
        trials = [{"label": f"seed {s}", "seed": s, "inputs": specs} for s in range(1, spec.seeds + 1)]
        for dist in spec.distributions:
            trials.append({"label": f"seed 1, {dist}", "seed": 1, "inputs": [
                {**d, "distribution": dist} if d.get("value") is None and _float(d["dtype"]) else d for d in specs]})
        if self.order_trial:
            trials.append({"label": "seed 1, affine iterations reversed", "seed": 1, "inputs": specs,
                           "affine_order": "reversed"})
        if spec.shapes:
            trials.append({"label": "seed 1, second size", "seed": 1, "second_size": True, "inputs": [
                {**d, "shape": list(spec.shapes.get(d["name"], d["shape"]))} for d in specs]})
        return trials[: self.max_trials]

    def run_trial(self, runs: ChildRuns, trial: dict, references: dict,
                  stop: threading.Event | None = None) -> tuple[ChildOutcome, ChildOutcome | None] | None:
        """The kernel, then the reference with its error-model variants (the device variant needs the
        kernel's dtypes), each in its own sandboxed child. Trials on the same inputs and device dtype
        (the order trial and seed 1) share one reference run.

        A kernel or reference at the first size that hits its time, CPU or memory limit sets `stop`:
        the trials not yet started would hit it too (a hanging kernel would otherwise hold a worker for
        every trial's timeout), and are skipped (None)."""
        if stop is not None and stop.is_set():
            return None
        inputs = tuple(InputSpec.model_validate(d) for d in trial["inputs"])
        kernel_job, ref_job = runs.jobs(seed=trial["seed"], inputs=inputs)
        kernel = runs.run(kernel_job.model_copy(update={"affine_order": trial.get("affine_order", "program")}),
                          "numerics")
        self._note_limit(kernel, trial, stop)
        if kernel.result.status != "ok" or ref_job is None:
            return kernel, None
        job = ref_job.model_copy(update={"reference_variants": ("f64", "dev", "abs", "pert"),
                                         "device_dtypes": device_dtypes(inputs, kernel.result.report),
                                         "device_regions": device_regions(inputs, kernel.result.report)})
        key = job.model_dump_json()
        with self._lock:
            future = references.get(key)
            owner = future is None
            if owner:
                future = references[key] = Future()
        if owner:
            try:
                future.set_result(runs.run(job, "numerics"))
            except BaseException as exc:
                future.set_exception(exc)
        reference = future.result()
        self._note_limit(reference, trial, stop)
        return kernel, reference

    @staticmethod
    def _note_limit(outcome: ChildOutcome, trial: dict, stop: threading.Event | None) -> None:
        error = outcome.result.error
        if stop is not None and error is not None and error.code in _LIMITS and not trial.get("second_size"):
            stop.set()

    # --- evidence ----------------------------------------------------------------------------
    def collect(self, submission: Submission) -> list[EvidenceItem]:
        key = (self.name, self.version, submission.content_hash, tuple(sorted(
            (k, repr(v)) for k, v in vars(self).items())))
        return memoized(key, lambda: self._collect(submission))

    def _collect(self, submission: Submission) -> list[EvidenceItem]:
        m = submission.manifest
        per_output: dict[int, list[TrialResult]] = {}
        outs: dict[int, list[np.ndarray]] = {}
        refs: dict[int, list[np.ndarray]] = {}
        growth: dict[int, list[tuple[float, float]]] = {}
        meta: dict[int, tuple[str, float, float]] = {}
        self_rounding: dict[int, str] = {}  # output -> the low-precision dtype its reference returns
        order_state_line = 0  # the reversed-order run traced another program (masks from Python state): dropped
        entry_line = 0
        runs = ChildRuns(submission, timeout_s=self.timeout_s, reference_timeout_s=self.reference_timeout_s,
                         memory_limit_bytes=self.memory_limit_bytes, sandbox=self.sandbox)
        if runs.refused:
            return []  # the simulator collector reports why the submission does not run
        plan = self.plan(submission)
        references: dict = {}
        with ThreadPoolExecutor(max_workers=max(1, self.parallel)) as pool:  # children, not Python work, in parallel
            stop = threading.Event()
            done = list(pool.map(lambda t: self.run_trial(runs, t, references, stop), plan))
        for trial, ran in zip(plan, done):
            if ran is None:
                continue  # skipped after a limit (run_trial)
            kernel, reference = ran
            entry_line = entry_line or kernel.result.entry_line
            if kernel.result.status != "ok" or reference is None or reference.result.status != "ok":
                continue  # the simulator collector reports errors of the seed-0 run
            report = kernel.result.report
            if trial.get("affine_order") == "reversed" and report is not None and report.order_state_line:
                # masks the kernel builds from Python state of earlier iterations (`mask = (...) & mask`) were
                # traced in program order; running Python's iterations backwards built others, so this run is not
                # the compiled loop in another legal order
                order_state_line = report.order_state_line
                continue
            metas = kernel.result.outputs
            arrays = {**kernel.arrays, **reference.arrays}
            k = _reduction_length(report, [o.shape for o in metas])
            roundings = report.rounding_depth if report is not None else 0
            device = lowest_precision(list(report.dtypes if report else ()))
            stage = lowest_precision(list(report.rounding_dtypes if report else ()))
            produced = {m_.array: m_.dtype for m_ in reference.result.outputs}
            for i, o in enumerate(metas):
                out, r64 = arrays.get(f"out{i}"), arrays.get(f"f64ref{i}")
                if out is None or r64 is None or not _float(o.dtype):
                    continue
                dev = arrays.get(f"devref{i}")
                rounded = _self_rounded(produced.get(f"f64ref{i}"))
                if rounded:
                    # the reference rounds its own result (`.astype(np.float16)`), so the "float64" reference and
                    # the device-faithful one round alike and their distance no longer measures output rounding:
                    # take one unit roundoff of the output dtype for it, as when there is no device reference
                    dev = None
                    self_rounding[i] = rounded
                elif dev is not None:
                    dev = dtypes.to_f32(dtypes.cast(dev.astype(np.float32), dtypes.resolve(o.dtype))).astype(np.float64)
                written = arrays.get(o.written) if o.written else None
                order = "affine reversed" if trial.get("affine_order") == "reversed" else "program"
                res = assess(Trial(trial["label"], out, r64, dev, arrays.get(f"absref{i}"), written, order,
                                   arrays.get(f"pertref{i}")),
                             o.dtype, k, tuple(m.kernel.grid), roundings, device, stage)
                if trial.get("second_size"):
                    growth.setdefault(i, []).append((k, res.rel_l2))
                    continue
                per_output.setdefault(i, []).append(res)
                if trial.get("affine_order") is None:
                    outs.setdefault(i, []).append(out)
                    refs.setdefault(i, []).append(r64)
                    if i not in meta:
                        growth.setdefault(i, []).insert(0, (k, res.rel_l2))
                rms = float(np.sqrt(np.mean(r64.astype(np.float64) ** 2))) if r64.size else 0.0
                meta.setdefault(i, (o.dtype, k, rms))
        loc = Location(file=m.kernel.file, start_line=entry_line, end_line=entry_line) if entry_line >= 1 else None
        items = []
        for i, results in sorted(per_output.items()):
            verdict = combine(results, outs.get(i), refs.get(i))
            items.append(self._verdict_item(i, verdict, meta[i], loc, self_rounding.get(i), order_state_line))
            if len(growth.get(i, ())) == 2:
                items.append(self._growth_item(i, growth[i], loc))
        return items

    def _verdict_item(self, i: int, v: Verdict, meta: tuple[str, float, float], loc,
                      self_rounding: str | None = None, order_state_line: int = 0) -> EvidenceItem:
        dtype, k, rms = meta
        w = v.worst
        rtol, atol, why = recommended_tolerance(dtype, k, rms)
        n = len(v.trials)
        pattern = w.pattern if (w is not None and v.verdict == "defect") else None
        if v.verdict == "within":
            title = f"Output {i}: within expected variation over {n} trials (rel L2 up to {w.rel_l2:.3g}, bound {w.bound:.3g})"
            severity = Severity.info
        elif v.verdict == "defect":
            where = f"; mismatches at {pattern.region}" if pattern else ""
            order = " with affine_range iterations reversed" if w.order != "program" else ""
            title = f"Output {i}: {v.summary}{order}: defect{where}"
            severity = Severity.critical if (w.ratio >= 100 or v.invariant or "zeros" in v.summary
                                             or "constant" in v.summary) else Severity.high
        else:
            title = f"Output {i}: cannot tell over {n} trials ({v.summary})"
            severity = Severity.low
        trials = "; ".join(f"{r.label}: {r.verdict} (rel L2 {r.rel_l2:.3g}, bound {r.bound:.3g})" for r in v.trials)
        rounding = (f"The reference returns {self_rounding} itself, so output rounding is taken as one unit roundoff "
                    f"of {dtype}: rel L2 " if self_rounding else
                    "Input/output rounding alone (device-faithful reference) accounts for rel L2 ")
        e_r = w.e_round if w.roundings else w.e_dev
        capped = (f" (measured by perturbing the inputs; {w.kappa_abs:.3g} from the reference on |inputs|, which "
                  f"grows faster than the inputs move it)" if w.kappa < w.kappa_abs else "")
        extra = (f"; {w.roundings} intermediate low-precision rounding{'s' if w.roundings > 1 else ''} before the "
                 f"output's own (values the kernel stores in a low-precision dtype on their way to the output) raise "
                 f"that to {e_r:.3g}" if w.roundings else "")
        if w.roundings and w.amplification == w.amplification:  # stages narrower than the output (not NaN)
            extra += (f" (each one unit roundoff of the stage's dtype over sqrt(3), times the reference's response "
                      f"{w.amplification:.3g} to relative perturbations)")
        detail = (f"{trials}. {rounding}"
                  f"{w.e_dev:.3g}{extra}; fp32 accumulation over K = {k:.0f} with conditioning {w.kappa:.3g}{capped} adds "
                  f"{w.bound_typ - e_r:.2g} typically (sqrt(K) u), {w.bound_worst - e_r:.2g} at worst (K u). "
                  f"Recommended cross-platform tolerance rtol {rtol:g}, atol {atol:.3g}: {why}. Cosine "
                  f"similarity {min(r.cosine for r in v.trials):.6f} (reported, not a gate).")
        if order_state_line:
            detail += (f" No reversed-order trial: line {order_state_line} uses a mask built in another affine_range "
                       "iteration (Python state, traced in program order), so running the iterations backwards in "
                       "Python traces a different kernel, not the compiled loop in another order.")
        ulp = w.ulp or {}
        metrics = {"trials": float(n), "ratio": _finite(w.ratio), "rel_l2": _finite(max(r.rel_l2 for r in v.trials)),
                   "bound_typ": w.bound_typ, "bound": w.bound, "bound_worst": w.bound_worst, "e_device": w.e_dev,
                   "intermediate_roundings": float(w.roundings),
                   "kappa": w.kappa,
                   "reduction_length": float(k), "recommended_rtol": rtol, "recommended_atol": atol,
                   "cosine_min": _finite(min(r.cosine for r in v.trials)),
                   **{f"ulp_{q}": _finite(val) for q, val in ulp.items()}}
        if pattern:
            metrics["mismatch_fraction"] = pattern.fraction
        metrics = {name: _sig(val) for name, val in metrics.items()}
        order_dependent = v.verdict == "defect" and all(
            (r.verdict == "defect") == (r.order != "program") for r in v.trials)
        labels = {"verdict": v.verdict, "pattern": pattern.name if pattern else "none",
                  "order_dependent": "yes" if order_dependent else "no",
                  "structured": "yes" if pattern and pattern.name in _STRUCTURED else "no",
                  "order": w.order, "dtype": dtype, "reason": v.summary[:200],
                  # no trial's bound could tell a defect from rounding (errormodel.VACUOUS_BOUND)
                  "bound": "vacuous" if v.verdict == "cannot_tell" and all(
                      r.bound >= VACUOUS_BOUND for r in v.trials) else "informative"}
        return EvidenceItem(id=make_id("numerics.verdict", i), kind="numerics.verdict", analyzer=self.analyzer,
                            severity=severity, title=title, detail=detail, location=loc, metrics=metrics, labels=labels)

    def _growth_item(self, i: int, pts: list[tuple[float, float]], loc) -> EvidenceItem:
        (k1, e1), (k2, e2) = pts
        slope = math.log(e2 / e1) / math.log(k2 / k1) if e1 > 0 and e2 > 0 and k1 > 0 and k2 != k1 else float("nan")
        shape = ("flat" if abs(slope) < 0.25 else "sqrt(K)" if slope < 0.75 else "linear in K") if slope == slope else "unknown"
        return EvidenceItem(
            id=make_id("numerics.growth", i), kind="numerics.growth", analyzer=self.analyzer, location=loc,
            title=f"Output {i}: error grows {shape} (rel L2 {e1:.3g} at K={k1:.0f}, {e2:.3g} at K={k2:.0f})",
            metrics={name: _sig(val) for name, val in
                     {"k1": k1, "k2": k2, "rel_l2_k1": e1, "rel_l2_k2": e2, "exponent": _finite(slope)}.items()},
            labels={"growth": shape})


def device_dtypes(inputs, report) -> tuple[str | None, ...]:
    """Per input, the dtype the device-faithful reference rounds it to: the lowest precision among its declared
    dtype and the dtypes the kernel computes all of its data in (evidence.nki.input_precision: a view that is not
    one box counts whole); None for non-tensors. Lower precision in boxes of it: `device_regions`."""
    if report is not None and report.input_regions:
        computed = {i: _covering(seen, inputs[i].shape) for i, seen in report.input_regions.items() if i < len(inputs)}
    else:
        computed = report.input_dtypes if report is not None else {}
    return tuple(lowest_precision([s.dtype, *computed.get(i, ())]) if s.is_tensor else None
                 for i, s in enumerate(inputs))


def device_regions(inputs, report) -> tuple[tuple[int, str, tuple[int, ...], tuple[int, ...]], ...]:
    """(input, dtype, lo, hi): the boxes of an input the kernel computes in a lower precision than the rest of it
    (a bf16 copy of one slice of an fp32 input), which the device-faithful reference rounds after device_dtypes."""
    if report is None or not report.input_regions:
        return ()
    whole = device_dtypes(inputs, report)
    out = []
    for i, seen in sorted(report.input_regions.items()):
        if i >= len(inputs) or whole[i] is None:
            continue
        for name, box in seen:
            if not _whole(box, inputs[i].shape) and lowest_precision([name, whole[i]]) == name != whole[i]:
                out.append((i, name, tuple(box[0]), tuple(box[1])))
    return tuple(out)


def _covering(seen, shape) -> list[str]:
    """The dtypes among (dtype, box) pairs whose boxes together cover an input of `shape` (a kernel that casts
    every K tile of an input to bf16 computes all of it in bf16)."""
    size = int(np.prod(shape)) if shape else 1
    out = []
    for name in {n for n, _ in seen}:
        boxes = [box for n, box in seen if n == name]
        if any(_whole(box, shape) for box in boxes):
            out.append(name)
        elif size <= 1 << 24 and all(len(box[0]) == len(shape) for box in boxes):
            mask = np.zeros(shape, bool)
            for lo, hi in boxes:
                mask[tuple(slice(a, b) for a, b in zip(lo, hi))] = True
            if mask.all():
                out.append(name)
        elif sum(int(np.prod(np.subtract(hi, lo))) for lo, hi in boxes) >= size:  # too large to paint: the volumes
            out.append(name)
    return out


def _whole(box, shape) -> bool:
    """A box (lo, hi) that is None or spans every element of an input of `shape`."""
    return box is None or (tuple(box[0]) == (0,) * len(shape) and tuple(box[1]) == tuple(shape))


def _self_rounded(produced: str | None) -> str | None:
    """`produced` when it is a float dtype narrower than float32 (what a reference returning `.astype(np.float16)`
    gives even on float64 inputs), else None."""
    if not produced or not _float(produced):
        return None
    # every float ml_dtypes knows, the variants NKI has no name for (e4m3fnuz, e5m2fnuz, e4m3b11fnuz) included
    bits = dtypes.significand_bits(produced)
    return produced if bits is not None and 2.0 ** -bits > U_FP32 else None


def _float(dtype: str) -> bool:
    """A dtype whose elements are numbers the error model can judge; the x4-packed MX dtypes are uint32 words of
    four codes each (compared bit for bit by sim.output), not one number."""
    return dtype.startswith(("float", "bfloat", "tfloat")) and dtype not in dtypes.PACKED


def _finite(x: float) -> float:
    """Infinity as 1e30 (JSON has none); NaN, a figure no trial defined (every trial "cannot tell" because the
    reference is not finite), stays NaN, so no threshold rule applies to it: as 1e30 it read "100x beyond the
    bound" and capped numerical correctness at 1 on a kernel matching its reference."""
    return 1e30 if math.isinf(x) else float(x)


def _sig(x: float, digits: int = 6) -> float:
    """`x` to `digits` significant digits: the float64 references are sums whose last bits depend on
    how many threads the BLAS uses, and the bundle hash must not (local pool and Ray workers differ)."""
    return float(f"{x:.{digits}g}")


def _reduction_length(report, shapes: list[tuple[int, ...]]) -> float:
    """K for the bounds: the matmul contraction length per output element, the longest reduction, or
    the longest chain of element-wise additions (a running sum carried across loop iterations)."""
    flops = float(report.matmul_flops) if report else 0.0
    elements = sum(int(np.prod(s or (1,))) for s in shapes)
    k = flops / (2.0 * elements) if flops > 0 and elements > 0 else 1.0
    if not report:
        return k
    return max(k, float(report.reduce_length), float(report.accumulation_depth))
