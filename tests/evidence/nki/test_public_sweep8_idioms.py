"""Semantics the eighth public-kernel sweep (beta dialect) found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np

import pytest

from evidence.nki import load_kernel, simulate

RNG = np.random.default_rng(81)

# The two halves of a [d, S] tile combined with index grids: the upper half is `i_half + d // 2` on the
# partition axis, a constant offset an index variable carries into the subscript. With d = 96 the lower half
# is a 48-partition operand starting at partition 48 (REFERENCE §1: 33-64 partitions start at 0 or 64).
HALVES = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def swap_scale(x, w):
    d, s = x.shape
    out = nl.ndarray((d, s), dtype=x.dtype, buffer=nl.shared_hbm)
    i_half = nl.arange(d // 2)[:, None]
    i_up = i_half + d // 2
    i_all = nl.arange(d)[:, None]
    i_s = nl.arange(s)[None, :]
    t = nl.ndarray((d, s), dtype=x.dtype, buffer=nl.sbuf)
    t[i_all, i_s] = nl.load(x[i_all, i_s])
    wt = nl.load(w[i_half, i_s])
    lo = nisa.tensor_tensor(t[i_half, i_s], wt, np.multiply)
    hi = nisa.tensor_tensor(t[i_up, i_s], wt, np.multiply)  # <- hi
    r = nl.ndarray((d, s), dtype=x.dtype, buffer=nl.sbuf)
    r[i_half, i_s] = nl.copy(hi)
    r[i_up, i_s] = nl.copy(lo)  # <- store
    nl.store(out[i_all, i_s], value=r)
    return out
'''


def _marked(src: str, tag: str) -> int:
    return next(i for i, line in enumerate(src.splitlines(), 1) if line.rstrip().endswith(f"# <- {tag}"))


@pytest.mark.parametrize("d", [128, 64, 96])
def test_partition_start_rule_sees_index_grid_offsets(d):
    mod = load_kernel(HALVES, display="halves.py")
    x = RNG.standard_normal((d, 64)).astype(np.float32)
    w = RNG.standard_normal((d // 2, 64)).astype(np.float32)
    sim = simulate(mod.swap_scale, x, w)
    h = d // 2
    np.testing.assert_array_equal(sim.outputs[0], np.concatenate([x[h:] * w, x[:h] * w]))
    found = {(f.code, f.line) for f in sim.report.findings if f.code == "partition_start_rule"}
    if d == 96:  # 48 partitions from partition 48: the operand read and the result written there
        assert found == {("partition_start_rule", _marked(HALVES, "hi")),
                         ("partition_start_rule", _marked(HALVES, "store"))}
        msg = next(f.message for f in sim.report.findings if f.code == "partition_start_rule")
        assert "48 partitions starting at partition 48" in msg
    else:  # 64 from 64 and 32 from 32 are legal starts
        assert found == set()


# Index grids whose partitions are legal or decided by a mask: a 32-partition quadrant (`i_q + 32 * q`, the
# offset through a loop variable), block-dimension tiles, and a 64-partition grid from partition 32 that a
# mask cuts to the 32 partitions 32-63. None of them is a finding.
LEGAL_GRIDS = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def quadrants(x):
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    i_p, i_f = nl.mgrid[0:128, 0:64]
    t[i_p, i_f] = nl.load(x[i_p, i_f])
    r = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    i_q = nl.arange(32)[:, None]
    for q in nl.static_range(4):
        r[i_q + 32 * q, i_f[0:32, :]] = nl.multiply(t[i_q + 32 * q, i_f[0:32, :]], 2.0)
    blk = nl.ndarray((2, nl.par_dim(128), 64), dtype=x.dtype, buffer=nl.sbuf)
    for b in nl.affine_range(2):
        blk[b, i_q + 64, i_f[0:32, :]] = nl.copy(r[i_q + 64, i_f[0:32, :]])
        blk[b, i_q, i_f[0:32, :]] = nl.copy(r[i_q, i_f[0:32, :]])
        blk[b, i_q + 32, i_f[0:32, :]] = nl.copy(r[i_q + 32, i_f[0:32, :]])
        blk[b, i_q + 96, i_f[0:32, :]] = nl.copy(r[i_q + 96, i_f[0:32, :]])
    i_w = nl.arange(64)[:, None]
    m = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    m[i_p, i_f] = nl.copy(blk[1, i_p, i_f])
    m[i_w + 32, i_f[0:64, :]] = nl.multiply(blk[0, i_w + 32, i_f[0:64, :]], 1.0, mask=i_w < 32)
    nl.store(out[i_p, i_f], value=m)
    return out
'''


def test_partition_start_rule_keeps_legal_and_masked_index_grids_clean():
    mod = load_kernel(LEGAL_GRIDS, display="quadrants.py")
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    sim = simulate(mod.quadrants, x)
    np.testing.assert_array_equal(sim.outputs[0], 2 * x)
    assert not [f for f in sim.report.findings if f.code == "partition_start_rule"]


# The ISA enums imported by their beta submodule, as the neuron-team MoE and paged-attention kernels do.
ISA_CONSTANTS = '''
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki.isa.constants import oob_mode


@nki.jit
def gather_rows(x, idx):
    out = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    rows = nl.load(idx)
    i_f = nl.arange(x.shape[1])[None, :]
    t = nl.load(x[rows[nl.arange(128)[:, None], 0], i_f], mode=oob_mode.error)
    nl.store(out, value=t)
    return out
'''


def test_isa_constants_submodule_imports_in_the_beta_dialect():
    mod = load_kernel(ISA_CONSTANTS, display="gather.py")
    x = RNG.standard_normal((300, 64)).astype(np.float32)
    idx = RNG.integers(0, 300, (128, 1)).astype(np.int32)
    sim = simulate(mod.gather_rows, x, idx)
    np.testing.assert_array_equal(sim.outputs[0], x[idx[:, 0]])
    assert mod.oob_mode is not None and int(mod.oob_mode.skip) == 1


# A ragged intermediate size (I = 96 of a 128-row tile) through two matmuls: up-projection with the stationary
# weight's free axis (the output rows) masked by the operand predicate, repeated as the instruction mask; then
# down-projection contracting over the intermediate, whose rows 96-127 were never written, with only the moving
# weight masked along K. Masked-out rows take no part: no NaN may reach the valid output.
RAGGED_MLP = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def ragged_mlp(xT, w_up, w_down):
    k, n = xT.shape          # [128, 128] tokens on the free axis
    i_size = w_up.shape[1]   # 96
    out = nl.ndarray((n, w_down.shape[1]), dtype=np.float32, buffer=nl.shared_hbm)
    x_sb = nl.load(xT)
    i_k = nl.arange(128)[:, None]
    i_m = nl.arange(128)[None, :]
    w_sb = nl.ndarray((128, 128), dtype=w_up.dtype, buffer=nl.sbuf)
    w_sb[i_k, i_m] = nl.load(w_up[i_k, i_m], mask=i_m < i_size)
    h_ps = nisa.nc_matmul(w_sb[i_k, i_m][i_m < i_size], x_sb, mask=(i_m < i_size))  # [I rows, n]
    h = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.sbuf)
    h[i_k, i_m] = nl.copy(h_ps, mask=i_k < i_size)
    i_n = nl.arange(w_down.shape[1])[None, :]
    wd = nl.ndarray((128, w_down.shape[1]), dtype=w_down.dtype, buffer=nl.sbuf)
    wd[i_k, i_n] = nl.load(w_down[i_k, i_n], mask=i_k < i_size)
    o_ps = nisa.nc_matmul(h[0:128, 0:128], wd[i_k, i_n][i_k < i_size])  # contracts over I
    nl.store(out, value=nl.copy(o_ps))
    return out
'''


def test_matmul_masks_keep_ragged_rows_out_of_the_product():
    mod = load_kernel(RAGGED_MLP, display="ragged_mlp.py")
    xT = RNG.standard_normal((128, 128)).astype(np.float32)
    w_up = RNG.standard_normal((128, 96)).astype(np.float32)
    w_down = RNG.standard_normal((96, 256)).astype(np.float32)
    sim = simulate(mod.ragged_mlp, xT, w_up, w_down)
    h = w_up.T @ xT  # [96, 128]
    np.testing.assert_allclose(sim.outputs[0], h.T @ w_down, rtol=1e-4, atol=1e-3)
    assert not [f for f in sim.report.findings if f.severity in ("high", "critical")]


# Rows scattered through a run-time index tile from an affine loop, two tiles of 128 indices each; unused slots
# of both tiles point at one dummy row (the last), so the two iterations write that row. The compiler checks
# output dependencies on static indices only: this is no compile error, but which write lands is undefined.
SCATTER_PADDED = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scatter_rows(x, idx):
    out = nl.ndarray((201, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)  # 200 rows and the dummy
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(x.shape[1])[None, :]
    for n in nl.affine_range(2):
        rows = nl.load(idx[n * 128 + i_p, 0])
        t = nl.load(x[n * 128 + i_p, i_f])
        nl.store(out[rows[i_p, 0], i_f], value=t)  # <- scatter
    return out
'''


def test_indirect_writes_that_collide_are_not_a_compile_error():
    mod = load_kernel(SCATTER_PADDED, display="scatter.py")
    x = RNG.standard_normal((256, 64)).astype(np.float32)
    idx = np.full((256, 1), 200, np.int32)  # slots 100-127 and 228-255 are padding
    idx[:100, 0] = np.arange(100)
    idx[128:228, 0] = np.arange(100, 200)
    sim = simulate(mod.scatter_rows, x, idx)
    np.testing.assert_array_equal(sim.outputs[0][:200], np.concatenate([x[:100], x[128:228]]))
    found = {(f.code, f.line, f.severity) for f in sim.report.findings}
    assert found == {("indirect_write_conflict", _marked(SCATTER_PADDED, "scatter"), "medium")}
    msg = sim.report.findings[0].message
    assert "index 200 on axis 0" in msg and "no compile error" in msg


# An optional mask argument narrowed per tile from its previous value (the blockwise MoE kernel's activation step).
MASK_FROM_EARLIER = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tails(x, mask=None):
    n, f = x.shape
    out = nl.ndarray((n, f), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(f)[None, :]
    fixed = i_f < f
    for i in nl.affine_range(2):
        rows = i * 128 + i_p
        t = nl.load(x[rows, i_f], mask=(rows < n) & fixed)
        mask = rows < n if mask is None else (rows < n) & mask
        nl.store(out[rows, i_f], value=nl.exp(t, mask=mask), mask=mask)  # <- reused
    return out
'''


def test_reversed_run_notes_a_mask_built_in_another_iteration():
    mod = load_kernel(MASK_FROM_EARLIER, display="tails.py")
    x = RNG.standard_normal((200, 64)).astype(np.float32)
    fwd = simulate(mod.tails, x)
    np.testing.assert_allclose(fwd.outputs[0], np.exp(x), rtol=1e-6)
    assert fwd.report.order_state_line == 0
    back = simulate(mod.tails, x, affine_order="reversed")
    # the load's mask, from one built before the loop (`fixed`) and this iteration's rows, is no such mask
    assert back.report.order_state_line == _marked(MASK_FROM_EARLIER, "reused")


# Rows gathered through an index tile whose out-of-range entries (the count of rows, a "skip" marker) must leave
# the destination as it was: `mode=oob_mode.skip`, as a kernel reusing the previous block's weights does.
OOB_SKIP = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.nki.isa.constants import oob_mode


@nki.jit
def gather_or_keep(x, idx):
    n, f = x.shape
    out = nl.ndarray((128, f), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(f)[None, :]
    buf = nl.ndarray((128, f), dtype=x.dtype, buffer=nl.sbuf)
    buf[i_p, i_f] = nl.load(x[i_p, i_f])
    rows = nl.load(idx)
    buf[i_p, i_f] = nl.load(x[rows[i_p, 0], i_f], mode=oob_mode.skip)
    nl.store(out, value=buf)
    return out
'''


def test_oob_skip_leaves_out_of_range_rows_unmoved():
    mod = load_kernel(OOB_SKIP, display="skip.py")
    x = RNG.standard_normal((300, 64)).astype(np.float32)
    idx = RNG.integers(0, 300, (128, 1)).astype(np.int32)
    idx[::3] = 300  # out of range: skipped
    sim = simulate(mod.gather_or_keep, x, idx)
    want = np.where(idx < 300, x[np.minimum(idx[:, 0], 299)], x[:128])
    np.testing.assert_array_equal(sim.outputs[0], want)
    assert not sim.report.findings


# A masked store of an integer [P, 1] tile into a 1-D HBM access of P elements (`flags[i_f + i_p + 1]`), the tile's
# partitions past the mask never written: the store reads only what it writes.
FLAGS_STORE = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def changed(ids):
    n = ids.shape[0]
    out = nl.ndarray((n,), dtype=np.uint8, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:1]
    a = nl.load(ids[i_p + i_f], dtype=np.int32, mask=i_p + 1 < n)
    b = nl.load(ids[i_p + i_f + 1], dtype=np.int32, mask=i_p + 1 < n)
    same = nl.ndarray((128, 1), dtype=np.uint8, buffer=nl.sbuf)
    same[0:128, 0:1] = nisa.tensor_tensor(a, b, op=np.not_equal, mask=i_p + 1 < n)
    nl.store(out[0], value=nl.zeros((1, 1), dtype=np.uint8)[0, 0])
    nl.store(out[i_f + i_p + 1], value=same[0:128, 0:1], mask=i_p + 1 < n)
    return out
'''


def test_masked_store_into_a_flat_access_reads_only_the_stored_elements():
    mod = load_kernel(FLAGS_STORE, display="flags.py")
    ids = np.array([[0], [0], [1], [1], [3]], np.int32)
    sim = simulate(mod.changed, ids.reshape(-1))
    np.testing.assert_array_equal(sim.outputs[0], [0, 0, 1, 0, 1])
    assert not [f for f in sim.report.findings if f.severity in ("high", "critical")]
