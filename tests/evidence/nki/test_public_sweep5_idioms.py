"""Semantics the fifth public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import SimulationError, load_kernel, simulate

RNG = np.random.default_rng(53)

# A masked result tile ([P, F], valid only where the mask held) stored through a two-index access of a 3-D
# tensor: the access is [P, F, G] and the tile broadcasts along G.
MASKED_STORE_BROADCAST = '''
import numpy as np
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def doubled(x, y):
    pi, fi = nl.mgrid[0:128, 0:64]
    mask = (pi < ROWS) & (fi < 64)
    data = nl.load(x[pi, fi], mask=mask)
    res = nisa.tensor_scalar(data, np.multiply, 2.0, mask=mask)
    nl.store(y[pi, fi], res, mask=mask)
'''


def test_masked_tile_stored_into_a_wider_access_broadcasts_its_valid_region():
    mod = load_kernel(MASKED_STORE_BROADCAST.replace("ROWS", "100"), display="bcast.py")
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    sim = simulate(mod.doubled, x, np.zeros((128, 64, 3), np.float32))
    expect = np.zeros((128, 64, 3), np.float32)
    expect[:100] = 2 * x[:100, :, None]
    np.testing.assert_array_equal(sim.outputs[0], expect)


def test_masked_tile_stored_out_of_bounds_of_a_3d_tensor_is_the_access_error_not_a_simulator_crash():
    mod = load_kernel(MASKED_STORE_BROADCAST.replace("ROWS", "128"), display="oob.py")
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    with pytest.raises(SimulationError) as exc:
        simulate(mod.doubled, x, np.zeros((2, 64, 64), np.float32))
    assert exc.value.code == "err_tensor_access_out_of_bound"


# Ragged rows through masked 128-row tiles: the masks keep 300 of the 384 rows loaded and stored.
MASKED_RAGGED_COPY = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def scaled(x):
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:cols]
    for t in nl.affine_range((rows + 127) // 128):
        keep = t * 128 + ip < rows
        tile = nl.load(x[t * 128 + ip, jf], mask=keep)
        res = nisa.tensor_scalar(tile, np.multiply, 3.0, mask=keep)
        nl.store(out[t * 128 + ip, jf], res, mask=keep)
    return out
'''


def test_masked_transfers_and_instructions_count_only_the_elements_their_masks_keep():
    mod = load_kernel(MASKED_RAGGED_COPY, display="ragged.py")
    x = RNG.standard_normal((300, 512)).astype(np.float32)
    sim = simulate(mod.scaled, x)
    np.testing.assert_array_equal(sim.outputs[0], 3 * x)
    rep = sim.report
    assert rep.hbm_read_bytes == x.nbytes  # not 384 rows' worth
    assert rep.hbm_write_bytes == x.nbytes
    assert rep.partition_utilisation == pytest.approx(300 / (3 * 128))
