"""Compare a kernel output with its reference: error norms, mismatch fraction, NaN/Inf counts.

An element mismatches when ``|out - ref| > atol + rtol * |ref|`` (numpy's isclose rule). An output
*matches* when its shape is right, no element mismatches **and** its relative L2 error
``||out - ref|| / ||ref||`` is within ``rel_l2_bound``.

Default policy (the task states no tolerance), from the output dtype (kernel-evaluation.md §3):

    dtype                rtol      atol (x RMS of the reference)
    float32 / tfloat32   1e-4      1e-5
    bfloat16             2e-2      1e-2
    float16              1e-3      1e-3
    float8 (e4m3, e5m2,  1.25e-1   1.25e-1
      OCP e4m3fn)
    float8_e8m0fnu       5e-1      5e-1      (MX scales, powers of two: one binade down passes, garbage does not)
    integers / bool      exact (0, 0); so are the x4-packed MX dtypes (float8_e4m3fn_x4, ...), whose uint32
                         words hold four codes each and are compared bit for bit, never as one number

- ``atol`` is **relative to the output's scale**: the table value times the RMS of the finite
  reference elements (``atol_effective``; the table value itself when the reference is all zero).
  Near-zero elements of a large output are judged against the output's magnitude, and a tiny
  output (softmax probabilities ~1e-3) gets a tiny atol, so an all-zero output cannot hide under it.
- ``rel_l2_bound`` is the dtype's rtol. With a known contraction length K (``reduction_length``,
  e.g. a matmul's K) the float tolerance grows like the fp32 accumulator's random-walk error,
  ``max(rtol, 16 * 2**-24 * sqrt(K))``; it matters only for fp32 outputs with very long reductions.

Task policy (the task states rtol and/or atol): the stated values are used as given (a stated atol
is absolute); a value it leaves out comes from the default policy. The output still never matches
when its relative L2 error is far beyond what the dtype allows: ``rel_l2_bound`` is
``max(task rtol, min(max(10 x default bound, 1e-3), 0.5))``, so a zero or garbage output
(rel L2 ~1) is a mismatch even under a loose absolute tolerance.

Error statistics are computed in float64 over elements finite in both arrays and written by the
kernel. ``written`` (a boolean mask from the simulator, True where the kernel wrote the output)
separates never-written elements (``unwritten_count``) from NaN/Inf the kernel computed
(``nan_count``/``inf_count`` count written elements only); both kinds count as mismatches.

Packed lanes: where the reference itself holds NaN or Inf codes in a position of the last axis (in any row),
that position carries bit patterns rather than values (an fp8 output with each row's fp32 scale packed into
4 of its bytes, as fp8 quantisation kernels return it: REFERENCE's IEEE-style float8_e4m3 decodes such bytes
to NaN/Inf). A kernel's NaN/Inf there is counted in ``coded_count``, not as NaN/Inf it computed: a scale one
ulp off the reference's turns a byte into a NaN or Inf code. It still mismatches unless the codes agree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-5),
    "tfloat32": (1e-4, 1e-5),
    "float64": (1e-4, 1e-5),
    "bfloat16": (2e-2, 1e-2),
    "float16": (1e-3, 1e-3),
    "float8_e4m3": (1.25e-1, 1.25e-1),
    "float8_e5m2": (1.25e-1, 1.25e-1),
    "float8_e4m3fn": (1.25e-1, 1.25e-1),  # OCP e4m3 (nki 0.3+): max 448, no inf; rounds as e4m3 does
    "float8_e8m0fnu": (5e-1, 5e-1),
}
_U_FP32 = 2.0**-24  # engine arithmetic and PSUM accumulation are fp32 whatever the output dtype
_GROWTH = 16.0
_TASK_BOUND_FACTOR, _TASK_BOUND_FLOOR, _TASK_BOUND_CAP = 10.0, 1e-3, 0.5


def default_tolerance(dtype_name: str) -> tuple[float, float]:
    """(rtol, atol-per-unit-RMS) for an output dtype name; integers compare exactly."""
    return DEFAULT_TOLERANCES.get(str(dtype_name), (0.0, 0.0))


def coarser_dtype(a: str, b: str) -> str:
    """Of two dtype names, the one with the looser default tolerance (the precision the comparison can expect)."""
    return b if default_tolerance(b)[0] > default_tolerance(a)[0] else a


def dtype_bound(dtype_name: str, reduction_length: float | None = None) -> float:
    """The default relative tolerance (and rel-L2 bound) of a dtype, grown for a contraction of length K."""
    rtol = default_tolerance(dtype_name)[0]
    if rtol > 0 and reduction_length and reduction_length > 1:
        rtol = max(rtol, _GROWTH * _U_FP32 * math.sqrt(reduction_length))
    return rtol


@dataclass(frozen=True, slots=True)
class Comparison:
    shape_ok: bool
    elements: int
    rel_l2: float
    max_abs_err: float
    max_rel_err: float
    mismatch_fraction: float
    nan_count: int
    inf_count: int
    rtol: float
    atol: float  # the atol actually applied (atol_effective)
    rel_l2_bound: float = 0.0
    unwritten_count: int = 0
    ref_rms: float = 0.0
    task_tolerance: bool = False
    reduction_length: float = 0.0
    coded_count: int = 0  # NaN/Inf of the kernel in packed lanes (see the module doc)

    @property
    def matches(self) -> bool:
        return self.shape_ok and self.mismatch_fraction == 0.0 and self.rel_l2 <= self.rel_l2_bound

    @property
    def rel_l2_exceeded(self) -> bool:
        return self.rel_l2 > self.rel_l2_bound

    def metrics(self) -> dict[str, float]:
        packed = {"coded_count": float(self.coded_count)} if self.coded_count else {}  # only where lanes are packed
        return {**packed,
            "rel_l2": self.rel_l2, "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
            "mismatch_fraction": self.mismatch_fraction, "nan_count": float(self.nan_count),
            "inf_count": float(self.inf_count), "rtol": self.rtol, "atol": self.atol,
            "matches": 1.0 if self.matches else 0.0, "elements": float(self.elements),
            "atol_effective": self.atol, "rel_l2_bound": self.rel_l2_bound,
            "unwritten_count": float(self.unwritten_count), "ref_rms": self.ref_rms,
            "task_tolerance": 1.0 if self.task_tolerance else 0.0, "reduction_length": self.reduction_length,
        }


def compare(actual, expected, rtol: float | None = None, atol: float | None = None,
            dtype_name: str | None = None, written=None, reduction_length: float | None = None) -> Comparison:
    """Statistics of `actual` against `expected` under the policy of the module docstring.

    rtol/atol are the task's (None: default policy for `dtype_name`, or actual's dtype); `written` is
    an optional boolean mask (True where the kernel wrote); `reduction_length` the contraction length K.
    """
    a = np.asarray(actual)
    e = np.asarray(expected)
    name = dtype_name or a.dtype.name
    task = rtol is not None or atol is not None
    tol = dtype_bound(name, reduction_length)
    d_rtol, d_atol = default_tolerance(name)
    atol_unit = d_atol * (tol / d_rtol) if d_rtol > 0 else d_atol
    k = float(reduction_length or 0.0)
    if a.shape != e.shape:
        if a.size == e.size and a.size > 0 and a.squeeze().shape == e.squeeze().shape:
            a = a.reshape(e.shape)  # [N, 1] vs [N] is the same data
            if written is not None:
                written = np.asarray(written).reshape(e.shape)
        else:
            return Comparison(False, int(a.size), 1.0, 0.0, 0.0, 1.0, 0, 0, tol if rtol is None else float(rtol),
                              atol_unit if atol is None else float(atol), 0.0, 0, 0.0, task, k)
    a64 = a.astype(np.float64)
    e64 = e.astype(np.float64)
    n = int(a64.size)
    ref_finite = np.isfinite(e64)
    ref_rms = float(np.sqrt(np.mean(np.square(e64[ref_finite])))) if ref_finite.any() else 0.0
    rtol = tol if rtol is None else float(rtol)
    atol = (atol_unit * (ref_rms if ref_rms > 0 else 1.0)) if atol is None else float(atol)
    if task:
        bound = max(rtol, min(max(_TASK_BOUND_FACTOR * tol, _TASK_BOUND_FLOOR), _TASK_BOUND_CAP))
    else:
        bound = tol
    if n == 0:
        return Comparison(True, 0, 0.0, 0.0, 0.0, 0.0, 0, 0, rtol, atol, bound, 0, 0.0, task, k)
    wmask = np.ones(a64.shape, bool) if written is None else np.broadcast_to(np.asarray(written, bool), a64.shape)
    unwritten = ~wmask
    plain = wmask & ~_packed_lanes(ref_finite)
    nan_count = int(np.count_nonzero(np.isnan(a64) & ~np.isnan(e64) & plain))
    inf_count = int(np.count_nonzero(np.isinf(a64) & ref_finite & plain))
    coded = int(np.count_nonzero(~np.isfinite(a64) & ref_finite & wmask & ~plain))
    both = ref_finite & np.isfinite(a64) & wmask
    diff = np.abs(a64 - e64, where=both, out=np.zeros_like(a64))
    ref_abs = np.abs(np.where(both, e64, 0.0))
    norm_ref = float(np.sqrt(np.sum(ref_abs**2)))
    norm_diff = float(np.sqrt(np.sum(diff**2)))
    rel_l2 = norm_diff / norm_ref if norm_ref > 0 else norm_diff
    max_abs = float(diff.max()) if both.any() else 0.0
    rel = diff / np.maximum(ref_abs, np.finfo(np.float64).tiny)
    max_rel = float(np.max(np.where(ref_abs > 0, rel, np.where(diff > 0, np.inf, 0.0)))) if both.any() else 0.0
    if not np.isfinite(max_rel):
        max_rel = float(np.finfo(np.float32).max)
    close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True) & wmask
    mismatch = float(np.count_nonzero(~close)) / n
    return Comparison(True, n, rel_l2, max_abs, max_rel, mismatch, nan_count, inf_count, rtol, atol, bound,
                      int(np.count_nonzero(unwritten)), ref_rms, task, k, coded)


def _packed_lanes(ref_finite: np.ndarray) -> np.ndarray:
    """True at the positions of the last axis where the reference holds a NaN or Inf code in some row (see the
    module doc), broadcast over the output; all False for a 1-D output or a reference finite everywhere."""
    if ref_finite.ndim < 2 or ref_finite.all():
        return np.zeros(ref_finite.shape, bool)
    lanes = ~ref_finite.reshape(-1, ref_finite.shape[-1]).all(axis=0)
    return np.broadcast_to(lanes, ref_finite.shape)
