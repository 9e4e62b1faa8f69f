"""Every agreement figure against a small case computed by hand, and against the libraries."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from grader.consistency import stats

# Hand case: gold [1, 2, 2, 3], other [1, 2, 3, 3] (worked in the comments of each test).
GOLD = [1, 2, 2, 3]
OTHER = [1, 2, 3, 3]


@pytest.fixture(scope="module")
def hand():
    return stats.agreement(GOLD, OTHER, resamples=200)


def test_exact_and_adjacent(hand):
    assert hand.exact.value == pytest.approx(3 / 4, abs=1e-9)  # one disagreement of four
    assert hand.adjacent.value == pytest.approx(1.0, abs=1e-9)  # it is one level off


def test_cohen_kappa(hand):
    # po = 3/4; marginals gold (1/4, 1/2, 1/4), other (1/4, 1/4, 1/2): pe = 1/16 + 2/16 + 2/16 = 5/16.
    # kappa = (3/4 - 5/16) / (1 - 5/16) = 7/11.
    assert hand.kappa.value == pytest.approx(7 / 11, abs=1e-9)


def test_quadratic_weighted_kappa(hand):
    # Observed weighted disagreement: 1/4 (one cell, weight 1). Expected: sum w_ij p_i q_j = 5/4.
    # QWK = 1 - (1/4) / (5/4) = 4/5 (unused levels 4 and 5 have no mass and change nothing).
    assert hand.qwk.value == pytest.approx(4 / 5, abs=1e-9)


def test_pearson_and_spearman(hand):
    # Deviations gold (-1, 0, 0, 1), other (-5/4, -1/4, 3/4, 3/4): cov 2, ss 2 and 11/4 -> r = 4 / sqrt(22).
    assert hand.pearson.value == pytest.approx(4 / math.sqrt(22), abs=1e-9)
    # Ranks (1, 2.5, 2.5, 4) and (1, 2, 3.5, 3.5): 3.75 / 4.5 = 5/6.
    assert hand.spearman.value == pytest.approx(5 / 6, abs=1e-9)


def test_standardised_mean_difference(hand):
    # (9/4 - 2) / sd(gold, ddof=1) = (1/4) / sqrt(2/3): positive, the other rater scores higher.
    assert hand.smd.value == pytest.approx(0.25 / math.sqrt(2 / 3), abs=1e-9)
    assert (hand.gold_mean, hand.other_mean) == (2.0, 2.25)


def test_confusion_matrix_rows_are_gold(hand):
    assert hand.confusion == [[1, 0, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 0, 0], [0] * 5, [0] * 5]


def test_krippendorff_ordinal_alpha_by_hand():
    # Values 1 x2, 2 x3, 3 x3 (n = 8). Ordinal deltas: d12 = (5/2)^2, d13 = (8 - 5/2)^2, d23 = 3^2.
    # Do = 2 * 9 / 8 = 2.25; De = 2 (6 * 6.25 + 6 * 30.25 + 9 * 9) / 56 = 600 / 56; alpha = 1 - 126/600 = 0.79.
    assert stats.alpha([GOLD, OTHER]) == pytest.approx(0.79, abs=1e-9)


def test_figures_match_the_libraries_on_random_data():
    rng = np.random.default_rng(3)
    g = rng.integers(1, 6, 60)
    o = np.clip(g + rng.integers(-1, 2, 60), 1, 5)
    a = stats.agreement(g.tolist(), o.tolist(), resamples=0)
    assert a.qwk.value == pytest.approx(cohen_kappa_score(g, o, weights="quadratic", labels=[1, 2, 3, 4, 5]), abs=1e-12)
    assert a.kappa.value == pytest.approx(cohen_kappa_score(g, o, labels=[1, 2, 3, 4, 5]), abs=1e-12)
    assert a.pearson.value == pytest.approx(sps.pearsonr(g, o).statistic, abs=1e-12)
    assert a.spearman.value == pytest.approx(sps.spearmanr(g, o).statistic, abs=1e-12)
    third = np.clip(g + rng.integers(-2, 3, 60), 1, 5)
    raters = [g.tolist(), o.tolist(), [None if i % 7 == 0 else int(v) for i, v in enumerate(third)]]
    data = np.array([[np.nan if v is None else v for v in r] for r in raters], dtype=float)
    assert stats.alpha(raters) == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]), abs=1e-12)


def test_undefined_figures_are_none_not_nan():
    same = stats.agreement([3, 3, 3], [3, 3, 3], resamples=50)
    assert same.exact.value == 1.0
    assert same.qwk.value is None and same.smd.value is None and same.pearson.value is None
    assert stats.agreement([], [], resamples=50).exact.value is None
    assert stats.alpha([[1, None], [None, 2]]) is None  # no item has two ratings


def test_bootstrap_interval_brackets_the_figure_and_is_reproducible():
    rng = np.random.default_rng(5)
    g = rng.integers(1, 6, 40).tolist()
    o = [min(5, max(1, x + int(d))) for x, d in zip(g, rng.integers(-1, 2, 40))]
    a = stats.agreement(g, o, resamples=300, seed=11)
    b = stats.agreement(g, o, resamples=300, seed=11)
    assert a == b
    for fig in (a.exact, a.qwk, a.smd, a.pearson):
        assert fig.low is not None and fig.low <= fig.value <= fig.high
    assert a.exact.high - a.exact.low > 0.05  # 40 items cannot pin agreement down to a point
    # Perfect agreement has no spread to resample.
    perfect = stats.agreement(g, g, resamples=100)
    assert (perfect.exact.low, perfect.exact.high) == (1.0, 1.0)


def test_lengths_must_match():
    with pytest.raises(ValueError, match="differ in length"):
        stats.agreement([1, 2], [1])
