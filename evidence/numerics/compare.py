"""Compare a kernel output with its reference: error norms, mismatch fraction, NaN/Inf counts.

Default tolerances by output dtype, used when the task states none (a mismatch is
``|out - ref| > atol + rtol * |ref|``, numpy's isclose rule):

    float32 / tfloat32   rtol 1e-4    atol 1e-5
    bfloat16             rtol 2e-2    atol 1e-2
    float16              rtol 1e-3    atol 1e-3
    float8 (e4m3, e5m2)  rtol 1.25e-1 atol 1.25e-1
    integers / bool      exact (0, 0)

Error statistics are computed in float64 over elements finite in both arrays; NaN and Inf in
the output where the reference is finite are counted separately and count as mismatches.
"""

from __future__ import annotations

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
}


def default_tolerance(dtype_name: str) -> tuple[float, float]:
    """(rtol, atol) for an output dtype name; integers compare exactly."""
    return DEFAULT_TOLERANCES.get(str(dtype_name), (0.0, 0.0))


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
    atol: float

    @property
    def matches(self) -> bool:
        return self.shape_ok and self.mismatch_fraction == 0.0

    def metrics(self) -> dict[str, float]:
        return {
            "rel_l2": self.rel_l2, "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err,
            "mismatch_fraction": self.mismatch_fraction, "nan_count": float(self.nan_count),
            "inf_count": float(self.inf_count), "rtol": self.rtol, "atol": self.atol,
            "matches": 1.0 if self.matches else 0.0, "elements": float(self.elements),
        }


def compare(actual, expected, rtol: float | None = None, atol: float | None = None,
            dtype_name: str | None = None) -> Comparison:
    """Statistics of `actual` against `expected`; tolerances default from `dtype_name` (or actual's dtype)."""
    a = np.asarray(actual)
    e = np.asarray(expected)
    name = dtype_name or a.dtype.name
    d_rtol, d_atol = default_tolerance(name)
    rtol = d_rtol if rtol is None else float(rtol)
    atol = d_atol if atol is None else float(atol)
    if a.shape != e.shape:
        if a.size == e.size and a.size > 0 and a.squeeze().shape == e.squeeze().shape:
            a = a.reshape(e.shape)  # [N, 1] vs [N] is the same data
        else:
            return Comparison(False, int(a.size), 1.0, 0.0, 0.0, 1.0, 0, 0, rtol, atol)
    a64 = a.astype(np.float64)
    e64 = e.astype(np.float64)
    n = int(a64.size)
    if n == 0:
        return Comparison(True, 0, 0.0, 0.0, 0.0, 0.0, 0, 0, rtol, atol)
    ref_finite = np.isfinite(e64)
    nan_count = int(np.count_nonzero(np.isnan(a64) & ~np.isnan(e64)))
    inf_count = int(np.count_nonzero(np.isinf(a64) & ref_finite))
    both = ref_finite & np.isfinite(a64)
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
    close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)
    mismatch = float(np.count_nonzero(~close)) / n
    return Comparison(True, n, rel_l2, max_abs, max_rel, mismatch, nan_count, inf_count, rtol, atol)
