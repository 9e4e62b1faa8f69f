"""Seeded, deterministic kernel inputs from a manifest's `[[inputs]]` tables.

Distributions (parameters default as shown):

- ``normal``   mean (0), std (1)
- ``uniform``  low (-1), high (1)
- ``zeros`` / ``ones``
- ``arange``   low (0) + 0, 1, 2, ... in row-major order
- ``randint``  integers in [low (0), high (10))
- ``positive`` uniform in [low (0.1), high (2.0)]: safe for log, sqrt, division
- ``mask``     0/1 values, 1 with probability mean (0.5)
- ``large``    normal scaled to a large magnitude the dtype still holds with room for products and
               sums (std, default: 1e4 for fp32/bf16/tf32, 16 for fp16, 8 for fp8 e4m3, 64 for e5m2)
- ``cancellation`` values of magnitude ~1 (1 + 1e-3 noise) with alternating signs along the last
               axis: sums and dot products cancel, so accumulation order and rounding show
- ``mixed``    each element from one of normal(0,1), uniform(-1,1), Laplace(0,1), exponential(1),
               log-normal(0,1) (KernelBench's rand_mix), chosen at random

Values are drawn in float64/int64 from a generator seeded by (seed, argument index), then cast
to the declared dtype; low precision goes through ml_dtypes, which rounds to nearest even.
A non-tensor argument (`value = ...`) is passed through unchanged.
"""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes
from evidence.submission import InputSpec

# std of the `large` distribution: big, yet products and long sums stay finite in the dtype
LARGE_SCALE = {"float16": 16.0, "float8_e4m3": 8.0, "float8_e4m3fn": 8.0, "float8_e5m2": 64.0}


def _draw(spec: InputSpec, rng: np.random.Generator) -> np.ndarray:
    shape, dist = tuple(spec.shape), spec.distribution
    size = int(np.prod(shape)) if shape else 1
    if dist == "normal":
        return rng.normal(spec.mean if spec.mean is not None else 0.0, spec.std if spec.std is not None else 1.0, shape)
    if dist == "uniform":
        return rng.uniform(spec.low if spec.low is not None else -1.0, spec.high if spec.high is not None else 1.0, shape)
    if dist == "zeros":
        return np.zeros(shape)
    if dist == "ones":
        return np.ones(shape)
    if dist == "arange":
        return (spec.low or 0.0) + np.arange(size, dtype=np.float64).reshape(shape)
    if dist == "randint":
        lo = int(spec.low) if spec.low is not None else 0
        hi = int(spec.high) if spec.high is not None else 10
        return rng.integers(lo, hi, shape)
    if dist == "positive":
        return rng.uniform(spec.low if spec.low is not None else 0.1, spec.high if spec.high is not None else 2.0, shape)
    if dist == "mask":
        p = spec.mean if spec.mean is not None else 0.5
        return (rng.random(shape) < p).astype(np.float64)
    if dist == "large":
        scale = spec.std if spec.std is not None else LARGE_SCALE.get(spec.dtype, 1e4)
        return rng.normal(spec.mean or 0.0, scale, shape)
    if dist == "cancellation":
        signs = np.where(np.arange(shape[-1] if shape else 1) % 2 == 0, 1.0, -1.0)
        return np.broadcast_to(signs, shape) * (1.0 + 1e-3 * rng.normal(0.0, 1.0, shape))
    if dist == "mixed":
        pick = rng.integers(0, 5, shape)
        draws = (rng.normal(0.0, 1.0, shape), rng.uniform(-1.0, 1.0, shape), rng.laplace(0.0, 1.0, shape),
                 rng.exponential(1.0, shape), rng.lognormal(0.0, 1.0, shape))
        return np.choose(pick, draws)
    raise ValueError(f"input {spec.name!r}: unknown distribution {dist!r}")


def generate_input(spec: InputSpec, index: int, seed: int = 0):
    """One argument: a numpy array in the declared dtype, or the plain value."""
    if not spec.is_tensor:
        return spec.value
    rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
    values = _draw(spec, rng)
    dt = dtypes.resolve(spec.dtype)
    if dtypes.is_int(dt):
        info = np.iinfo(dtypes.storage(dt))
        values = np.clip(np.rint(values), info.min, info.max)
    return dtypes.cast(values, dt)  # ml_dtypes rounds to nearest even (it goes through float32)


def generate_inputs(specs, seed: int = 0) -> list:
    """All arguments in order; the same specs and seed always give the same arrays."""
    return [generate_input(s, i, seed) for i, s in enumerate(specs)]
