"""Output comparison statistics on hand-computed cases."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from evidence.numerics.compare import compare, default_tolerance


def test_hand_computed_errors():
    c = compare(np.array([1.0, 2.0, 3.5, 4.0], np.float32), np.array([1.0, 2.0, 3.0, 4.0]))
    assert c.elements == 4 and c.shape_ok
    assert math.isclose(c.rel_l2, 0.5 / math.sqrt(30))
    assert c.max_abs_err == 0.5 and math.isclose(c.max_rel_err, 0.5 / 3)
    assert c.mismatch_fraction == 0.25 and not c.matches
    assert (c.rtol, c.atol) == (1e-4, 1e-5)


def test_exact_match_and_task_tolerance():
    a = np.array([1.0, 2.0], np.float32)
    assert compare(a, a.astype(np.float64)).matches
    loose = compare(np.array([1.0, 2.1], np.float32), np.array([1.0, 2.0]), rtol=0.1, atol=0.0)
    assert loose.matches and loose.rtol == 0.1


def test_nan_and_inf_are_counted_and_mismatch():
    c = compare(np.array([np.nan, np.inf, 1.0], np.float32), np.array([1.0, 1.0, 1.0]))
    assert (c.nan_count, c.inf_count) == (1, 1)
    assert math.isclose(c.mismatch_fraction, 2 / 3) and not c.matches
    assert c.rel_l2 == 0.0  # error statistics cover elements finite in both


def test_shape_mismatch_and_squeezable_shapes():
    bad = compare(np.zeros((2, 3)), np.zeros((3, 2)))
    assert not bad.shape_ok and not bad.matches and bad.mismatch_fraction == 1.0
    ok = compare(np.zeros((4, 1)), np.zeros(4))
    assert ok.shape_ok and ok.matches


def test_default_tolerances_by_dtype():
    assert default_tolerance("float32") == (1e-4, 1e-5)
    assert default_tolerance("bfloat16") == (2e-2, 1e-2)
    assert default_tolerance("float16") == (1e-3, 1e-3)
    assert default_tolerance("float8_e4m3") == (1.25e-1, 1.25e-1)
    assert default_tolerance("int32") == (0.0, 0.0)
    bf = np.array([1.0, 2.0], np.float32).astype(ml_dtypes.bfloat16)
    c = compare(bf, np.array([1.01, 2.0]))
    assert (c.rtol, c.atol) == (2e-2, 1e-2) and c.matches
    assert set(c.metrics()) == {"rel_l2", "max_abs_err", "max_rel_err", "mismatch_fraction", "nan_count",
                                "inf_count", "rtol", "atol", "matches", "elements"}
