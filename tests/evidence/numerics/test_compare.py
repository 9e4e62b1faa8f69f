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
    rms = math.sqrt((1 + 4 + 9 + 16) / 4)  # default atol is in units of the reference's RMS
    assert c.rtol == 1e-4 and math.isclose(c.atol, 1e-5 * rms) and c.rel_l2_bound == 1e-4


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
    assert c.rtol == 2e-2 and math.isclose(c.atol, 1e-2 * math.sqrt((1.01**2 + 4) / 2)) and c.matches
    assert set(c.metrics()) == {"rel_l2", "max_abs_err", "max_rel_err", "mismatch_fraction", "nan_count",
                                "inf_count", "rtol", "atol", "matches", "elements", "atol_effective",
                                "rel_l2_bound", "unwritten_count", "ref_rms", "task_tolerance", "reduction_length"}


def _fp32_matmul(seed=0, k=512):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((256, k)).astype(np.float32)
    b = rng.standard_normal((k, 512)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # a correct fp32 kernel: K-blocked fp32 accumulation, a different order than the reference's
    got = np.zeros((256, 512), np.float32)
    for k0 in range(0, k, 128):
        got += a[:, k0:k0 + 128] @ b[k0:k0 + 128]
    return got, exact


def test_correct_fp32_matmul_matches_despite_near_zero_elements():
    got, exact = _fp32_matmul()
    c = compare(got, exact)
    assert c.rel_l2 < 1e-6 and c.matches and c.mismatch_fraction == 0.0
    # the old absolute atol (1e-5) rejects near-zero elements of this scale-22 output
    assert not np.isclose(got, exact, rtol=1e-4, atol=1e-5).all()
    assert c.atol > 1e-4 and math.isclose(c.ref_rms, float(np.sqrt(np.mean(exact**2))))


def test_all_zero_output_of_small_scale_never_matches():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 1024))
    ref = np.exp(x - x.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)  # every element ~1e-3, below the bf16 table atol 1e-2
    zeros = np.zeros_like(ref).astype(ml_dtypes.bfloat16)
    c = compare(zeros, ref, dtype_name="bfloat16")
    assert c.rel_l2 == 1.0 and not c.matches and c.mismatch_fraction > 0.9
    # a loose absolute task tolerance is honoured elementwise, but rel L2 1.0 is still a mismatch
    t = compare(zeros, ref, rtol=0.0, atol=1e-2, dtype_name="bfloat16")
    assert t.mismatch_fraction < 0.01 and t.rel_l2_exceeded and not t.matches and t.task_tolerance
    good = compare(ref.astype(ml_dtypes.bfloat16), ref, dtype_name="bfloat16")
    assert good.matches and good.rel_l2 < 5e-3


def test_default_verdict_is_scale_invariant():
    got, exact = _fp32_matmul(seed=2)
    for scale in (1e-6, 1.0, 1e6):
        c = compare((got.astype(np.float64) * scale).astype(np.float32), exact * scale)
        assert c.matches, scale
    wrong = got.copy()
    wrong[0, :8] += 1e-3 * float(np.sqrt(np.mean(exact**2)))  # 1e-3 of the output scale on 8 elements
    for scale in (1e-6, 1.0, 1e6):
        assert not compare(wrong * scale, exact * scale).matches


def test_task_bound_honours_a_loose_rtol_and_caps_otherwise():
    ref = np.linspace(1.0, 2.0, 100)
    off = ref * 1.03
    assert compare(off, ref, rtol=0.05).matches  # the task allows 5 %
    c = compare(off, ref, atol=0.1)  # rtol defaults; the absolute atol covers 3 % but rel L2 0.03 > 1e-3 bound
    assert c.mismatch_fraction == 0.0 and c.rel_l2_bound == 1e-3 and not c.matches
    assert compare(ref * 1.0005, ref, atol=0.1).matches  # within 10x the fp32 default


def test_reduction_length_grows_the_fp32_bound_only_for_long_reductions():
    from evidence.numerics.compare import dtype_bound
    assert dtype_bound("float32", 512) == 1e-4 and dtype_bound("float32", None) == 1e-4
    assert math.isclose(dtype_bound("float32", 2**20), 16 * 2**-24 * 1024)
    assert dtype_bound("bfloat16", 2**20) == 2e-2 and dtype_bound("int32", 2**20) == 0.0
    c = compare(np.ones(4) * (1 + 2e-4), np.ones(4), reduction_length=2**20)
    assert c.matches and c.reduction_length == 2**20


def test_unwritten_elements_are_not_nan_but_are_mismatches():
    ref = np.ones((4, 8))
    out = np.ones((4, 8), np.float32)
    out[3] = np.nan  # never written: the simulator's fill
    out[0, 0] = np.nan  # computed NaN
    written = np.ones((4, 8), bool)
    written[3] = False
    c = compare(out, ref, written=written)
    assert (c.nan_count, c.unwritten_count) == (1, 8)
    assert math.isclose(c.mismatch_fraction, 9 / 32) and not c.matches
    # an unwritten element that happens to hold the right value is still a mismatch
    c2 = compare(np.ones((4, 8), np.float32), ref, written=written)
    assert c2.nan_count == 0 and math.isclose(c2.mismatch_fraction, 8 / 32)


def test_coarser_dtype():
    from evidence.numerics.compare import coarser_dtype
    assert coarser_dtype("float32", "bfloat16") == "bfloat16"
    assert coarser_dtype("bfloat16", "float32") == "bfloat16"
    assert coarser_dtype("float32", "float64") == "float32"
    assert coarser_dtype("int32", "missing") == "int32"
