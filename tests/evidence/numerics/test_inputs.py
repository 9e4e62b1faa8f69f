"""Seeded input generation: determinism, distributions, dtype casting."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from evidence.numerics.inputs import generate_input, generate_inputs
from evidence.submission import InputSpec


def spec(**kw) -> InputSpec:
    return InputSpec(**{"name": "x", "shape": (64, 32), **kw})


def test_same_seed_same_arrays_and_different_arguments_differ():
    specs = [spec(), spec(name="y")]
    a1, b1 = generate_inputs(specs, seed=3)
    a2, b2 = generate_inputs(specs, seed=3)
    np.testing.assert_array_equal(a1, a2)
    np.testing.assert_array_equal(b1, b2)
    assert not np.array_equal(a1, b1)
    assert not np.array_equal(a1, generate_inputs(specs, seed=4)[0])


@pytest.mark.parametrize("dist,check", [
    ("zeros", lambda a: (a == 0).all()),
    ("ones", lambda a: (a == 1).all()),
    ("arange", lambda a: a.ravel()[5] == 5 and a.ravel()[-1] == a.size - 1),
    ("uniform", lambda a: a.min() >= -1 and a.max() <= 1),
    ("positive", lambda a: a.min() >= 0.1 and a.max() <= 2.0),
    ("mask", lambda a: set(np.unique(a)) <= {0.0, 1.0}),
    ("normal", lambda a: abs(a.mean()) < 0.2 and 0.8 < a.std() < 1.2),
])
def test_distributions(dist, check):
    assert check(generate_input(spec(distribution=dist), 0))


def test_parameters_and_integer_and_bf16_dtypes():
    a = generate_input(spec(distribution="normal", mean=5.0, std=0.01), 0)
    assert abs(a.mean() - 5.0) < 0.01
    r = generate_input(spec(distribution="randint", low=2, high=5, dtype="int32"), 0)
    assert r.dtype == np.int32 and r.min() >= 2 and r.max() <= 4
    b = generate_input(spec(dtype="bfloat16"), 0)
    f = generate_input(spec(dtype="float32"), 0)
    assert b.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(b, f.astype(ml_dtypes.bfloat16))  # same draw, rounded to nearest even
    assert generate_input(InputSpec(name="n", value=7), 0) == 7


def test_unknown_distribution_is_refused_where_the_input_is_defined():
    # InputSpec validates itself, so evidence callers get the check the CLI gets (issue 8.4)
    with pytest.raises(ValueError, match="distribution\n  unknown distribution 'cauchy'; expected one of normal"):
        spec(distribution="cauchy")


def test_error_model_distributions():
    large = generate_input(spec(distribution="large", dtype="bfloat16"), 0).astype(np.float32)
    assert 2e3 < large.std() < 5e4 and np.isfinite(large).all()
    half = generate_input(spec(distribution="large", dtype="float16"), 0).astype(np.float32)
    assert 5 < half.std() < 40  # fp16 keeps products of large values finite
    canc = generate_input(spec(distribution="cancellation"), 0)
    assert np.allclose(np.abs(canc), 1, atol=1e-2) and abs(canc.sum(axis=1)).max() < 0.1  # rows cancel
    mixed = generate_input(InputSpec(name="x", shape=(4000,), distribution="mixed"), 0)
    assert (mixed > 5).any() and (mixed < -1).any() and (mixed > 0).mean() > 0.5  # heavy tails, skew
