"""Seeded, deterministic kernel inputs from a manifest's `[[inputs]]` tables.

Distributions (parameters default as shown):

- ``normal``   mean (0), std (1)
- ``uniform``  low (-1), high (1)
- ``zeros`` / ``ones``
- ``arange``   low (0) + 0, 1, 2, ... in row-major order
- ``randint``  integers in [low (0), high (10))
- ``positive`` uniform in [low (0.1), high (2.0)]: safe for log, sqrt, division
- ``mask``     0/1 values, 1 with probability mean (0.5)

Values are drawn in float64/int64 from a generator seeded by (seed, argument index), then cast
to the declared dtype; low precision goes through ml_dtypes, which rounds to nearest even.
A non-tensor argument (`value = ...`) is passed through unchanged.
"""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes
from evidence.submission import InputSpec


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
