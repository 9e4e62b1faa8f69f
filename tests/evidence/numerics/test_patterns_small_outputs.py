"""Mismatch patterns of outputs smaller than one tile (found on a global-norm port, sweep 7)."""

from __future__ import annotations

import numpy as np

from evidence.numerics.patterns import mismatch_pattern


def test_an_output_under_one_tile_has_no_last_partial_tile():
    # A [1, 1] reduction result that is wrong (a bf16 accumulator) is not an unmasked ragged tail.
    assert mismatch_pattern(np.ones((1, 1), bool)).name == "everywhere"
    m = np.zeros((64, 32), bool)
    m[::3, :] = True  # every third row of a single partial tile
    assert mismatch_pattern(m).name == "every_kth_row"
    m = np.zeros((300, 64), bool)
    m[260:300] = True  # past two whole tiles: still the ragged tail
    assert mismatch_pattern(m).name == "last_partial_tile"
