"""The conditioning estimate's cap: how much the float64 reference moves when its inputs move by a rounding.

kappa = ||f(|x|)|| / ||f(x)|| (errormodel) is the condition number of sums of products; a reference that
exponentiates an input (a log-decay gate: exp(g) with g < 0) grows like exp(+|g|) on |x| instead, and on
nki-library's gated delta-net prefill kappa read 2e5, a bound loose enough to pass an output off by half.

The cap measures instead: the float64 reference on the float inputs perturbed element-wise by a relative
DELTA with seeded random signs, `PATTERNS` sign patterns, each giving ||f(x (1 + DELTA s)) - f(x)|| /
(DELTA ||f(x)||), the relative output change per unit relative input change. For a sum of K products of similar
size that response is kappa / sqrt(K) (random signs add like a random walk, the |x| estimate like a worst case),
so the error model caps kappa at SAFETY * sqrt(K) * the largest response (errormodel.assess): the cap is above
the |x| estimate for sums, cancelling or not, and binds only where f grows faster on |x| than its inputs do.
DELTA (2^-20) keeps the response linear for exponentials of arguments up to ~1e4 and above float32 noise of a
reference that rounds its own result.
"""

from __future__ import annotations

import numpy as np

DELTA = 2.0**-20
PATTERNS = 3
SAFETY = 2.0
_SEED = 20261203


def perturbed(inputs: list, pattern: int, is_float) -> list:
    """The float inputs (already float64) times 1 + DELTA s, s = +-1 drawn per element from (pattern, index)."""
    out = []
    for idx, x in enumerate(inputs):
        if is_float(x):
            rng = np.random.default_rng(np.random.SeedSequence([_SEED, pattern, idx]))
            x = x * (1.0 + DELTA * (2.0 * rng.integers(0, 2, np.shape(x)) - 1.0))
        out.append(x)
    return out


def response(base: np.ndarray, moved: np.ndarray) -> float:
    """||moved - base|| / (DELTA ||base||); NaN when either is not finite or the base is zero."""
    base, moved = np.asarray(base, np.float64), np.asarray(moved, np.float64)
    if base.shape != moved.shape or not (np.isfinite(base).all() and np.isfinite(moved).all()):
        return float("nan")
    norm = float(np.linalg.norm(base))
    return float(np.linalg.norm(moved - base)) / (DELTA * norm) if norm > 0 else float("nan")


def cap(responses, k: float) -> float | None:
    """The cap on kappa from the responses of the sign patterns (None: no finite response, no cap)."""
    r = np.asarray(responses if responses is not None else (), np.float64).ravel()
    if r.size == 0 or not np.isfinite(r).all():
        return None
    return max(1.0, SAFETY * float(np.sqrt(max(float(k or 1.0), 1.0))) * float(r.max()))
