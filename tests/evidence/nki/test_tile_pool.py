"""Zero tiles handed out again within a run (evidence.nki.tile_pool): never one still in use, always zeros."""

from __future__ import annotations

import numpy as np

from evidence.nki import load_kernel, simulate
from evidence.nki.tile_pool import MIN_BYTES, TilePool

SHAPE = (128, 512)  # 256 KiB of fp32: pooled


def test_a_tile_in_use_is_never_handed_out_again_and_a_free_one_comes_back_zeroed():
    pool = TilePool()
    held = pool.zeros(SHAPE, np.float32)
    view = pool.zeros(SHAPE, np.float32)[:, :8]  # only a view keeps this one alive
    dropped = pool.zeros(SHAPE, np.float32)
    held[...] = 1.0
    view[...] = 2.0
    dropped[...] = 3.0
    dropped_address = dropped.__array_interface__["data"][0]
    del dropped
    again = [pool.zeros(SHAPE, np.float32) for _ in range(3)]
    addresses = [a.__array_interface__["data"][0] for a in again]
    assert dropped_address in addresses  # the free tile is reused ...
    assert all(not a.any() for a in again)  # ... zeroed, as every new tile is
    assert (held == 1.0).all() and (view == 2.0).all()  # tiles still in use are untouched
    assert held.__array_interface__["data"][0] not in addresses


def test_small_tiles_are_plain_zeros():
    pool = TilePool()
    small = (128, MIN_BYTES // 4 // 128 - 1)
    assert pool.zeros(small, np.float32).flags.owndata and not pool.tiles


# PSUM tiles zeroed in a loop, some kept in a list (live across iterations), some dropped at once:
# every kept tile must keep its own sum, and every new one must start from zeros (read directly at the end)
KEPT_PSUM = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kept_partials(x, w):
    out = nl.ndarray((7, 128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    xs = nl.load(x)
    ws = nl.load(w)
    kept = []
    for i in range(12):
        acc = nl.zeros((nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum)
        for j in range(i % 3 + 1):
            acc += nisa.nc_matmul(ws, xs)
        if i % 2 == 0:
            kept.append(acc)
    for i in range(6):
        nl.store(out[i], value=nl.multiply(kept[i], 1.0))  # waits for the products: dropped tiles are free
    total = nl.zeros((nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    for i in range(6):  # new tiles read as they are: zeros, whichever tile they reuse
        fresh = nl.zeros((nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum)
        total = nl.add(total, nl.abs(fresh))
    nl.store(out[6], value=total)
    return out
'''


def test_kept_and_dropped_psum_zero_tiles_keep_their_own_sums():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((128, 512)).astype(np.float32)
    w = rng.standard_normal((128, 128)).astype(np.float32)
    product = w.T @ x
    sim = simulate(load_kernel(KEPT_PSUM, display="kept.py").kept_partials, x, w)
    for k, i in enumerate(range(0, 12, 2)):
        np.testing.assert_allclose(sim.outputs[0][k], (i % 3 + 1) * product, rtol=1e-5, atol=1e-4)
    assert not sim.outputs[0][6].any()
