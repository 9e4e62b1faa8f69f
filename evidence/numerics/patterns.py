"""Where the mismatches are: the spatial pattern of wrong elements, per 128-row tile.

The first axis of an output is the one kernels tile over partitions, so the pattern is named in
tile terms, and it usually names the bug:

- ``last_partial_tile``: only the rows past the last whole tile (an unmasked ragged tile);
- ``partition_band``: the same band of partitions in every tile (a wrong partition offset or stride);
- ``every_kth_row``: rows r with r % k == c (a wrong stride);
- ``spmd_instance``: one of the grid's equal slices of rows (one SPMD instance indexes wrongly);
- ``one_tile`` / ``column_band``: a single tile, or a band of columns;
- ``everywhere``: spread over most tiles (precision, a wrong formula); ``scattered`` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TILE = 128


@dataclass(frozen=True)
class Pattern:
    name: str
    region: str  # human description, e.g. "rows 256-299 (the last partial tile)"
    fraction: float  # of elements mismatching


def _rows_cols(mask: np.ndarray) -> np.ndarray:
    m = np.asarray(mask, dtype=bool)
    if m.ndim == 0:
        return m.reshape(1, 1)
    if m.ndim == 1:
        return m.reshape(-1, 1)
    return m.reshape(m.shape[0], -1)


def _span(idx: np.ndarray) -> str:
    return f"{int(idx.min())}-{int(idx.max())}" if idx.size > 1 else f"{int(idx[0])}"


def mismatch_pattern(mask: np.ndarray, grid: tuple[int, ...] = ()) -> Pattern | None:
    """The pattern of True elements of `mask` (shaped like the output), or None when there are none."""
    m2 = _rows_cols(mask)
    total = m2.size
    bad = int(m2.sum())
    if bad == 0:
        return None
    frac = bad / total
    rows_hit = m2.any(axis=1)
    cols_hit = m2.any(axis=0)
    rows = np.nonzero(rows_hit)[0]
    nrows, ncols = m2.shape
    ntiles = -(-nrows // TILE)
    tiles_hit = np.unique(rows // TILE)
    full = (nrows // TILE) * TILE
    # only past at least one whole tile: an axis shorter than a tile is all one partial tile, so naming that
    # tile says nothing (it named "rows 0-1" of a [batch 2, channels, ...] output whose channels 128+ were wrong)
    if full and nrows % TILE and rows.min() >= full:
        return Pattern("last_partial_tile", f"rows {_span(rows)} (the last partial tile, rows {full}-{nrows - 1})", frac)
    if grid and grid[0] > 1 and nrows % grid[0] == 0:
        per = nrows // grid[0]
        inst = np.unique(rows // per)
        if inst.size == 1 and grid[0] > 1:
            return Pattern("spmd_instance", f"rows {_span(rows)}: the slice of SPMD instance {int(inst[0])} "
                           f"of {grid[0]} along the first grid axis", frac)
    if rows.size >= 2:
        step = np.diff(rows)
        k = int(step.min())
        if k > 1 and np.all(step % k == 0) and rows.size >= 3:
            return Pattern("every_kth_row", f"every {_ordinal(k)} row (rows {int(rows[0])}, {int(rows[1])}, ...)", frac)
    if ntiles >= 2 and tiles_hit.size >= max(2, ntiles // 2):
        parts = np.unique(rows % TILE)
        span = int(parts.max() - parts.min() + 1)
        if span < TILE // 2 and parts.size == span and rows_hit.sum() < 0.75 * nrows:
            return Pattern("partition_band", f"partitions {_span(parts)} of every tile", frac)
    if tiles_hit.size == 1 and ntiles > 1:
        t = int(tiles_hit[0])
        return Pattern("one_tile", f"rows {_span(rows)}, all in tile {t} (rows {t * TILE}-{min(nrows, (t + 1) * TILE) - 1})",
                       frac)
    cols = np.nonzero(cols_hit)[0]
    if ncols > 1 and cols.size < 0.5 * ncols and rows_hit.mean() > 0.5:
        where = _trailing_axes(np.asarray(mask, dtype=bool)) or f"columns {_span(cols)} (of {ncols})"
        return Pattern("column_band", f"{where} across the rows", frac)
    if tiles_hit.size >= max(1, int(0.75 * ntiles)) and rows_hit.mean() > 0.5:
        return Pattern("everywhere", f"{frac:.0%} of the elements, spread over every tile", frac)
    return Pattern("scattered", f"{bad} elements in rows {_span(rows)}", frac)


def _trailing_axes(m: np.ndarray) -> str:
    """For an output of 3+ dims, the indices hit on each axis after the first that is not hit whole
    (columns of the flattened trailing axes name no index the kernel uses); "" otherwise."""
    if m.ndim < 3:
        return ""
    parts = []
    for ax in range(1, m.ndim):
        hit = np.nonzero(m.any(axis=tuple(a for a in range(m.ndim) if a != ax)))[0]
        if hit.size < m.shape[ax]:
            parts.append(f"indices {_span(hit)} of axis {ax} (size {m.shape[ax]})")
    return ", ".join(parts)


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"
