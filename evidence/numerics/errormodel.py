"""The error model: is a kernel's error what its dtypes predict, or a defect?

Per trial (a seed, an input distribution, possibly affine loops run in reverse order) three
references of the submission's numpy function are compared with the kernel's output:

- ``ref64``: the inputs (already in their declared dtypes) widened to float64: exact arithmetic;
- ``refdev`` (device-faithful): each input rounded to the precision the kernel computes it in,
  computed in float32 (fp32 accumulation, as TensorE's PSUM), the output rounded to the output
  dtype. Its distance from ``ref64`` is what input and output rounding alone cost (``e_dev``).
  An input's precision is the lowest of its declared dtype and the dtypes the simulator saw the
  kernel compute on its data in (evidence.nki.input_precision): a tile holding the input's data
  unchanged (loaded, DMA'd, cast, copied, transposed) that any instruction computes on, and any
  TensorE operand derived from the input, since TensorE multiplies in its operands' dtype while
  the other engines compute in fp32. So fp32 inputs cast to bf16 for a matmul are rounded to bf16,
  fp8 weights times bf16 activations keep bf16 activations (one lowest dtype for every input
  rounded them to fp8: a bound ~15x too loose), and a low-precision value after the last matmul
  (a bf16 running sum, partials cast to fp8) lowers no input's precision: the bound still sees it.
  A value another engine computes from an input and stores in low precision (x * s in bf16, then
  used by vector instructions) is not the input's rounding but an intermediate one (below);
- ``refabs``: float64 on the inputs' absolute values, for the conditioning kappa =
  ||refabs|| / ||ref64|| (1 when the sums do not cancel; large under near-cancellation), capped at
  2 sqrt(K) times the float64 reference's measured response to random-sign relative perturbations of its inputs
  (evidence.numerics.conditioning): f(|x|) of a reference that exponentiates an input (exp of a log-decay gate)
  grows like exp(+|g|), which the cap does not let into the bound.

Expected relative L2 error (u = unit roundoff; Higham; Higham & Mary's probabilistic analysis;
kernel-evaluation §3.2-3.3), with K the reduction length from the trace (matmul FLOPs per output
element / 2, or the longest free-axis reduction):

    typical        B_typ   = e_r + kappa * sqrt(K) * u_fp32
    decision bound B       = 1.5 e_r + 4 kappa * sqrt(K) * u_fp32
    deterministic  B_worst = e_r + kappa * K * u_fp32        (reported; pessimistic for long K)

where the roundings a kernel makes in the device dtype before its TensorE operands (the simulator's
`rounding_depth` r: a bf16 norm before a projection stores x * rstd and then * gamma in bf16), which the device
reference does not make, add in quadrature: e_r = sqrt(e_dev^2 + r e1^2) with e1 = min(e_dev, u_dev / sqrt(3)) the
RMS error of one rounding at the output's scale, r capped at `MAX_INTERMEDIATE_ROUNDINGS`. Stages stored narrower
than the output (bf16 activations on their way to an fp32 output; every such stage counts, not only TensorE
operands) are the output's whole error, far above e_dev: each then adds e1 = u_stage / sqrt(3) * rho, rho the
reference's measured response to independent relative perturbations of its inputs (at most kappa; kappa when none
was measured), the same first-order propagation a stage's independent relative roundings go through. The typical and worst
bounds take e_r for e_dev; the decision bound adds e_r - e_dev once (the 1.5 slack is for the kernel and the
device reference rounding the same values differently). r = 0 gives the bounds above.

B holds for correct fp32 accumulation except with probability under ~1e-3 (lambda = 4), and the 1.5
covers the kernel and the device reference rounding the same value differently. Verdict per trial:
within expected variation when e <= B; "exceeds the bound by xN: defect" when e > 2 B (N = e / B);
cannot tell in between, when a reference is not finite, or when B >= 0.5 (the bound is vacuous: see
`VACUOUS_BOUND`). Never-written, NaN or Inf elements are a
defect, located by their own pattern. Over trials: a defect if any trial is one, within if all are,
otherwise cannot tell. All-zero and constant outputs, and outputs that do not change when the
inputs do, are defects whatever the norms say. Cosine similarity is reported, never used to decide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from evidence.nki.dtypes import significand_bits
from evidence.numerics import conditioning
from evidence.numerics.patterns import Pattern, mismatch_pattern

# unit roundoff u = 2^-t (t significand bits including the implicit one); the OCP fp8 of nki 0.3+ (e4m3fn: max 448,
# no inf) rounds like the IEEE-style e4m3 (max 240), and the MX scale e8m0fnu holds powers of two only (t = 1)
SIGNIFICAND_BITS = {n: significand_bits(n) for n in ("float64", "float32", "tfloat32", "float16", "bfloat16",
                                                     "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu")}
# per dtype (ml_dtypes' finfo): the exponent of the smallest normal (2^MIN_EXP; below it the spacing is the
# subnormals' 2^(MIN_EXP - t + 1)) and the largest finite value
MIN_EXP = {"float32": -126, "tfloat32": -126, "float16": -14, "bfloat16": -126, "float8_e4m3": -6,
           "float8_e4m3fn": -6, "float8_e5m2": -14, "float8_e8m0fnu": -127}
MAX_FINITE = {"float32": 3.4028234663852886e38, "tfloat32": 3.4011621342146535e38, "float16": 65504.0,
              "bfloat16": 3.3895313892515355e38, "float8_e4m3": 240.0, "float8_e4m3fn": 448.0, "float8_e5m2": 57344.0,
              "float8_e8m0fnu": 1.7014118346046923e38}
U_FP32 = 2.0**-24
KAPPA_MAX = 1e6
# A decision bound at or above this relative L2 error cannot tell a defect from rounding: an output off by half its
# own norm (a lost term, a wrong section, a sign slip on part of it) would read "within". kappa comes from the
# reference on the inputs' absolute values, which assumes sums of products; through exp or division (an attention
# backward's exp(s - lse)) it measures the function at other inputs and can exceed 1e5 where nothing cancels.
VACUOUS_BOUND = 0.5
# intermediate roundings the bound allows for: a normalisation chain (scale, then weight) before a matmul; more
# (a running sum kept in bf16) is a precision choice the bound does not excuse
MAX_INTERMEDIATE_ROUNDINGS = 3


def unit_roundoff(dtype: str) -> float:
    return 2.0 ** -SIGNIFICAND_BITS.get(dtype, 24)


def max_finite(dtype: str) -> float:
    """The largest finite value of a float dtype (float32's for a name not in the table)."""
    return MAX_FINITE.get(dtype, MAX_FINITE["float32"])


def lowest_precision(dtypes) -> str | None:
    """The float dtype with the fewest significand bits among `dtypes` (None: none is a float)."""
    floats = [d for d in dtypes if d in SIGNIFICAND_BITS and d != "float64"]
    return min(floats, key=lambda d: SIGNIFICAND_BITS[d]) if floats else None


@dataclass
class Trial:
    label: str  # e.g. "seed 1, normal"
    out: np.ndarray  # the kernel's output, widened exactly
    ref64: np.ndarray
    refdev: np.ndarray | None = None
    refabs: np.ndarray | None = None
    written: np.ndarray | None = None  # True where the kernel wrote (None: everywhere)
    order: str = "program"  # or "affine reversed"
    # the float64 reference's relative change per unit relative input perturbation, per sign pattern
    # (evidence.numerics.conditioning): caps kappa where f(|x|) grows faster than f(x) (an exponentiated input)
    response: np.ndarray | None = None


@dataclass
class TrialResult:
    label: str
    verdict: str  # within | defect | cannot_tell
    reason: str = ""
    rel_l2: float = math.nan
    e_dev: float = math.nan
    kappa: float = 1.0
    kappa_abs: float = 1.0  # ||f(|x|)|| / ||f(x)|| before the perturbation cap
    bound_typ: float = math.nan
    bound: float = math.nan  # the decision bound
    bound_worst: float = math.nan  # deterministic K u
    ratio: float = math.nan  # rel_l2 / bound
    roundings: int = 0  # intermediate low-precision roundings the bound allows for (capped)
    e_round: float = math.nan  # e_dev with those roundings added in quadrature
    # stages narrower than the output: how much one stage's relative rounding errors move it (errormodel._one_rounding)
    amplification: float = math.nan
    cosine: float = math.nan
    ulp: dict = field(default_factory=dict)  # p50, p90, p99, max ULP error in the output dtype
    pattern: Pattern | None = None
    order: str = "program"


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    nb = float(np.linalg.norm(b))
    return float(np.linalg.norm(a - b)) / nb if nb > 0 else (0.0 if not np.any(a) else math.inf)


def ulp_errors(out: np.ndarray, ref: np.ndarray, dtype: str) -> np.ndarray:
    """|out - ref| in units of the last place of `ref` in `dtype` (subnormals: the smallest spacing)."""
    t = SIGNIFICAND_BITS.get(dtype, 24)
    mag = np.abs(ref)
    _, exp = np.frexp(np.where(mag > 0, mag, 1.0))
    # frexp's exponent is one above IEEE's (mag = m 2^exp, 0.5 <= m < 1): the smallest normal 2^MIN_EXP has
    # exp = MIN_EXP + 1 and spacing 2^(MIN_EXP + 1 - t), which the subnormals below it keep
    ulp = np.ldexp(1.0, np.maximum(exp, MIN_EXP.get(dtype, -126) + 1) - t)
    return np.abs(out - ref) / ulp


def assess(trial: Trial, out_dtype: str, k: float, grid: tuple[int, ...] = (), roundings: int = 0,
           device_dtype: str | None = None, stage_dtype: str | None = None) -> TrialResult:
    res = TrialResult(label=trial.label, verdict="cannot_tell", order=trial.order)
    out = np.asarray(trial.out, dtype=np.float64)
    ref = np.asarray(trial.ref64, dtype=np.float64)
    if out.shape != ref.shape:
        return _set(res, "defect", f"output shape {list(out.shape)} differs from the reference's {list(ref.shape)}",
                    ratio=math.inf)
    if not np.isfinite(ref).all():
        return _set(res, "cannot_tell", "the float64 reference is not finite for these inputs")
    written = trial.written if trial.written is not None else np.ones(out.shape, bool)
    bad_special = ~np.isfinite(out) | ~written
    out_f = np.where(bad_special, 0.0, out)
    u_out = unit_roundoff(out_dtype)
    res.rel_l2 = _rel(out_f, ref) if not bad_special.any() else math.inf  # finite part: see the pattern
    res.e_dev = _rel(np.asarray(trial.refdev, np.float64), ref) if trial.refdev is not None else u_out
    if trial.refabs is not None and np.isfinite(trial.refabs).all():
        norm = float(np.linalg.norm(ref))
        res.kappa = min(max(float(np.linalg.norm(trial.refabs)) / norm, 1.0), KAPPA_MAX) if norm > 0 else KAPPA_MAX
    k = max(float(k or 1.0), 1.0)
    res.kappa_abs = res.kappa
    measured = conditioning.cap(trial.response, k) if trial.response is not None else None
    if measured is not None and measured < res.kappa:
        res.kappa = measured  # the reference on |x| grew faster than its inputs move it: an exponentiated input
    acc = res.kappa * math.sqrt(k) * U_FP32
    r = min(max(int(roundings or 0), 0), MAX_INTERMEDIATE_ROUNDINGS)
    res.roundings = r
    one = _one_rounding(res, trial, out_dtype, device_dtype, stage_dtype, r)
    e_r = res.e_round = math.sqrt(res.e_dev**2 + r * one**2) if r else res.e_dev
    res.bound_typ = e_r + acc
    # the 1.5 slack covers the kernel and the device reference rounding the same values differently; the
    # intermediate roundings are the kernel's alone and count once
    res.bound = 1.5 * res.e_dev + (e_r - res.e_dev) + 4 * acc + U_FP32
    res.bound_worst = e_r + res.kappa * k * U_FP32
    denom = float(np.linalg.norm(out_f)) * float(np.linalg.norm(ref))
    res.cosine = float(np.vdot(out_f.ravel(), ref.ravel()) / denom) if denom > 0 else math.nan
    errs = ulp_errors(out_f, ref, out_dtype)[~bad_special]
    if errs.size:
        res.ulp = {q: float(np.percentile(errs, p)) for q, p in (("p50", 50), ("p90", 90), ("p99", 99))}
        res.ulp["max"] = float(errs.max())
    res.ratio = res.rel_l2 / res.bound
    if bad_special.any():  # never-written or NaN/Inf elements are the defect; their place names it
        res.pattern = mismatch_pattern(bad_special, grid)
        unwritten = int((~written).sum())
        what = f"{unwritten} elements never written" if unwritten else f"{int(bad_special.sum())} NaN/Inf elements"
        top = max_finite(out_dtype)
        beyond = int((written & ~np.isfinite(out) & (np.abs(ref) > top)).sum())
        why = f"; {beyond} where the reference exceeds {out_dtype}'s largest value {top:g}: overflow" if beyond else ""
        return _set(res, "defect", f"{what} (of {out.size}{why})", ratio=math.inf)
    # elements off by more than the worst-case bound at the output's scale, or 4 roundings of their own value
    scale = float(np.sqrt(np.mean(ref**2))) if ref.size else 0.0
    tol = np.maximum(2 * res.bound * scale, 4 * u_out * np.abs(ref))
    res.pattern = mismatch_pattern(np.abs(out_f - ref) > tol, grid)
    if ref.size and not np.any(out_f) and np.any(ref):
        return _set(res, "defect", "the output is all zeros", ratio=math.inf)
    if out.size > 1 and np.ptp(out_f) == 0 and np.ptp(ref) > 0:
        return _set(res, "defect", "the output is constant", ratio=max(res.ratio, 1.0))
    if res.ratio > 2:
        return _set(res, "defect", f"exceeds the bound by x{res.ratio:.3g}")
    if res.bound >= VACUOUS_BOUND:
        return _set(res, "cannot_tell", f"the bound {res.bound:.3g} is vacuous (conditioning kappa {res.kappa:.3g} "
                    f"from the reference on |inputs|): an error of half the output's norm would pass")
    if res.ratio <= 1:
        return _set(res, "within", "within expected variation")
    return _set(res, "cannot_tell", f"between the bound and twice the bound (x{res.ratio:.2g})")


def _one_rounding(res: TrialResult, trial: Trial, out_dtype: str, device_dtype: str | None, stage_dtype: str | None,
                  r: int) -> float:
    """The RMS relative error one intermediate rounding adds at the output's scale.

    Stages stored narrower than an fp32 output (bf16 values on their way to it): each rounds its values by
    independent relative errors of RMS u_stage / sqrt(3), which reach the output as the inputs' own relative errors
    do, so the output moves by u_stage / sqrt(3) times the reference's measured response to independent relative
    perturbations (`Trial.response`; kappa when none was measured, the worst case of such sums). A low-precision
    output (whose count holds only the stages a matmul reads, `accumulation.Roundings`): what the output rounding
    alone costs (e_dev, when the inputs are already in the device dtype), at most u / sqrt(3)."""
    if not r:
        return 0.0
    stage = stage_dtype or device_dtype or out_dtype
    if SIGNIFICAND_BITS.get(out_dtype, 24) >= 24 and unit_roundoff(stage) > unit_roundoff(out_dtype):
        measured = np.asarray(trial.response if trial.response is not None else (), np.float64).ravel()
        amplify = float(measured.max()) if measured.size and np.isfinite(measured).all() else res.kappa
        res.amplification = min(amplify, res.kappa)
        return unit_roundoff(stage) / math.sqrt(3.0) * res.amplification
    return min(res.e_dev, unit_roundoff(device_dtype or out_dtype) / math.sqrt(3.0))


def _set(res: TrialResult, verdict: str, reason: str, ratio: float | None = None) -> TrialResult:
    res.verdict, res.reason = verdict, reason
    if ratio is not None:
        res.ratio = ratio
    return res


def recommended_tolerance(out_dtype: str, k: float, ref_rms: float) -> tuple[float, float, str]:
    """(rtol, atol, why): the cross-platform tolerance the dtypes and the reduction length justify."""
    u_out = unit_roundoff(out_dtype)
    k = max(float(k or 1.0), 1.0)
    acc = 4 * math.sqrt(k) * U_FP32
    raw = 2 * u_out + acc
    rtol = _nice(raw)
    atol = _nice(rtol * ref_rms) if ref_rms > 0 else rtol
    why = (f"{out_dtype} output rounding (u = {u_out:.2g}, two roundings on two platforms) and fp32 accumulation "
           f"over K = {k:.0f} (4 sqrt(K) u = {acc:.2g}); atol at the output's RMS ({ref_rms:.3g})")
    return rtol, atol, why


def _nice(x: float) -> float:
    """Round up to 1, 2 or 5 times a power of ten."""
    if x <= 0:
        return 0.0
    e = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * 10**e >= x * (1 - 1e-12):
            return float(m * 10**e)
    return float(10 ** (e + 1))


@dataclass
class Verdict:
    verdict: str  # within | defect | cannot_tell
    summary: str
    worst: TrialResult | None
    trials: list[TrialResult]
    invariant: bool = False  # the output did not change while the inputs did


def combine(results: list[TrialResult], outputs: list[np.ndarray] | None = None,
            refs: list[np.ndarray] | None = None) -> Verdict:
    if not results:
        return Verdict("cannot_tell", "no trial ran", None, results)
    invariant = False
    if outputs and refs and len(outputs) >= 2:
        same_out = all(o.shape == outputs[0].shape and np.array_equal(o, outputs[0]) for o in outputs[1:])
        refs_differ = any(r.shape != refs[0].shape or not np.array_equal(r, refs[0]) for r in refs[1:])
        invariant = same_out and refs_differ
    defects = [r for r in results if r.verdict == "defect"]
    if invariant:
        return Verdict("defect", "the output does not change when the inputs do", max(results, key=_key), results, True)
    if defects:
        worst = max(defects, key=_key)
        return Verdict("defect", worst.reason, worst, results)
    worst = max(results, key=_key)
    if all(r.verdict == "within" for r in results):
        return Verdict("within", "within expected variation", worst, results)
    return Verdict("cannot_tell", worst.reason, worst, results)


def _key(r: TrialResult) -> float:
    return r.ratio if not math.isnan(r.ratio) else -1.0
