"""Agreement statistics between two raters on an ordinal scale, from the field's libraries.

Point figures: exact and adjacent agreement, quadratic-weighted and unweighted Cohen's kappa
(scikit-learn), Pearson and Spearman correlation (scipy), the standardised mean difference
(RSMTool's unpooled form: (mean(other) - mean(gold)) / sd(gold), sample SD), the confusion matrix
(scikit-learn) and Krippendorff's ordinal alpha for several raters (`krippendorff`). Confidence
intervals: paired percentile bootstrap (`scipy.stats.bootstrap`) over items, seeded so a report is
reproducible. A figure that is undefined for the data (constant scores, fewer than two items) is
None, never NaN and never a made-up value.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

# scikit-learn, scipy and krippendorff are imported where used: the report models (and with them
# every `grader evaluate` that checks a draft against a stored run) must not pay for them.

SCALE = (1, 2, 3, 4, 5)
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 20260
CONFIDENCE = 0.95
METRICS = ("exact", "adjacent", "qwk", "kappa", "pearson", "spearman", "smd")


def defined(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _quiet(fn, *args, **kwargs) -> float:
    """Run a statistic with its degenerate-data warnings silenced (undefined figures become None)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                return float(fn(*args, **kwargs))
            except ValueError:
                return math.nan


def exact(gold: np.ndarray, other: np.ndarray) -> float:
    return float(np.mean(gold == other)) if len(gold) else math.nan


def adjacent(gold: np.ndarray, other: np.ndarray) -> float:
    return float(np.mean(np.abs(gold - other) <= 1)) if len(gold) else math.nan


def qwk(gold: np.ndarray, other: np.ndarray, labels: Sequence[int] = SCALE) -> float:
    from sklearn.metrics import cohen_kappa_score

    return _quiet(cohen_kappa_score, gold, other, labels=list(labels), weights="quadratic")


def kappa(gold: np.ndarray, other: np.ndarray, labels: Sequence[int] = SCALE) -> float:
    from sklearn.metrics import cohen_kappa_score

    return _quiet(cohen_kappa_score, gold, other, labels=list(labels))


def pearson(gold: np.ndarray, other: np.ndarray) -> float:
    from scipy import stats

    if len(gold) < 2:
        return math.nan
    return _quiet(lambda: stats.pearsonr(gold, other).statistic)


def spearman(gold: np.ndarray, other: np.ndarray) -> float:
    from scipy import stats

    if len(gold) < 2:
        return math.nan
    return _quiet(lambda: stats.spearmanr(gold, other).statistic)


def smd(gold: np.ndarray, other: np.ndarray) -> float:
    """(mean(other) - mean(gold)) / sample SD of gold: positive when `other` scores higher."""
    if len(gold) < 2:
        return math.nan
    sd = float(np.std(gold, ddof=1))
    return (float(np.mean(other)) - float(np.mean(gold))) / sd if sd > 0 else math.nan


_FIGURES = {"exact": exact, "adjacent": adjacent, "qwk": qwk, "kappa": kappa,
            "pearson": pearson, "spearman": spearman, "smd": smd}


def figures(gold: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Every paired figure, in METRICS order (NaN where undefined)."""
    return np.array([_FIGURES[m](gold, other) for m in METRICS])


def confusion(gold: Sequence[int], other: Sequence[int], labels: Sequence[int] = SCALE) -> list[list[int]]:
    """Rows are gold levels, columns the other rater's levels, both in `labels` order."""
    from sklearn.metrics import confusion_matrix

    if not len(gold):
        return [[0] * len(labels) for _ in labels]
    return confusion_matrix(list(gold), list(other), labels=list(labels)).tolist()


def alpha(ratings: Sequence[Sequence[float | None]], labels: Sequence[int] = SCALE) -> float | None:
    """Krippendorff's ordinal alpha; `ratings` is raters x items, None where a rater gave no score."""
    import krippendorff

    data = np.array([[math.nan if v is None else float(v) for v in row] for row in ratings], dtype=float)
    pairable = np.sum(np.sum(~np.isnan(data), axis=0) >= 2)
    if data.shape[0] < 2 or pairable < 2:
        return None
    return defined(_quiet(krippendorff.alpha, reliability_data=data, level_of_measurement="ordinal",
                           value_domain=list(labels)))


class Figure(BaseModel):
    """A point figure with its bootstrap 95% interval (None where undefined)."""

    model_config = ConfigDict(frozen=True)

    value: float | None = None
    low: float | None = None
    high: float | None = None

    def __str__(self) -> str:
        if self.value is None:
            return "undefined"
        if self.low is None or self.high is None:
            return f"{self.value:.2f}"
        return f"{self.value:.2f} [{self.low:.2f}, {self.high:.2f}]"


class Agreement(BaseModel):
    """Two raters (gold and another) on the items both scored."""

    model_config = ConfigDict(frozen=True)

    n: int
    exact: Figure = Figure()
    adjacent: Figure = Figure()
    qwk: Figure = Figure()
    kappa: Figure = Figure()
    pearson: Figure = Figure()
    spearman: Figure = Figure()
    smd: Figure = Figure()
    gold_mean: float | None = None
    other_mean: float | None = None
    confusion: list[list[int]] = []
    labels: list[int] = list(SCALE)


def agreement(gold: Sequence[int], other: Sequence[int], *, labels: Sequence[int] = SCALE,
              resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> Agreement:
    """Every figure of `other` against `gold` (paired by position), with bootstrap CIs."""
    if len(gold) != len(other):
        raise ValueError(f"paired scores differ in length: {len(gold)} vs {len(other)}")
    g = np.asarray(gold, dtype=float)
    o = np.asarray(other, dtype=float)
    point = figures(g, o)
    low = high = np.full(len(METRICS), math.nan)
    if len(g) >= 3 and resamples > 0:
        low, high = _bootstrap(g, o, resamples, seed)
    out = {m: Figure(value=defined(point[i]),
                     low=defined(low[i]) if defined(point[i]) is not None else None,
                     high=defined(high[i]) if defined(point[i]) is not None else None)
           for i, m in enumerate(METRICS)}
    return Agreement(n=len(g), **out, gold_mean=float(g.mean()) if len(g) else None,
                     other_mean=float(o.mean()) if len(o) else None,
                     confusion=confusion(list(gold), list(other), labels), labels=list(labels))


def _bootstrap(g: np.ndarray, o: np.ndarray, resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile intervals over item resamples; resamples where a figure is undefined are left out."""
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = stats.bootstrap((g, o), figures, paired=True, vectorized=False, n_resamples=resamples,
                              method="percentile", confidence_level=CONFIDENCE, rng=np.random.default_rng(seed))
    dist = res.bootstrap_distribution  # metrics x resamples
    tail = (1 - CONFIDENCE) / 2 * 100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # all-NaN rows: undefined interval
        low = np.nanpercentile(dist, tail, axis=1)
        high = np.nanpercentile(dist, 100 - tail, axis=1)
    return low, high
