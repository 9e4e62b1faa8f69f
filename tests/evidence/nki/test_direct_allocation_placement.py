"""`overlapping_placement` on the beta dialect's direct allocation (`ncc.sbuf.alloc(func)`, `ncc.sbuf.mod_alloc`,
`ncc.psum.alloc(func)`, `ncc.psum.mod_alloc`): each logical block is a physical tile where the allocator puts
it, a modulo allocator rotates blocks over its tiles, and a read of a tile another tile wrote over while its
values were still needed is reported at the read. Rotating buffers used as the documentation's double buffering
(block i + n written after block i was consumed) are legal and are not. Kernels written here."""

from __future__ import annotations

import numpy as np

from evidence.nki import load_kernel, simulate

RNG = np.random.default_rng(32)

# Four blocks through an SBUF modulo allocation of `tiles` physical tiles. `fused`: each block is loaded and
# consumed before the next (double buffering, legal for any tiles >= 1); otherwise all four are loaded first and
# summed after, so with 2 tiles blocks 2 and 3 overwrite blocks 0 and 1 before they are read.
SBUF_ROTATION = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim


def _two_slots(idx, pdim_size, fdim_size):
    return (0, (idx[0] % 2) * fdim_size)


@nki.jit
def block_sum(x, tiles=2, fused=False, by_function=False):
    n, P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    if by_function:
        buf = nl.ndarray((n, par_dim(P), F), dtype=nl.float32, buffer=ncc.sbuf.alloc(_two_slots))
    else:
        buf = nl.ndarray((n, par_dim(P), F), dtype=nl.float32,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(tiles,)))
    acc = nl.ndarray((par_dim(P), F), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=4 * F * 4))
    acc[...] = nl.zeros((P, F), dtype=nl.float32)
    if fused:
        for i in nl.sequential_range(n):
            buf[i] = nl.load(x[i])
            acc[...] = nl.add(acc, buf[i])
    else:
        for i in nl.affine_range(n):
            buf[i] = nl.load(x[i])
        for i in nl.sequential_range(n):
            acc[...] = nl.add(acc, buf[i])
    nl.store(out, value=acc)
    return out
'''


def _overlaps(sim):
    return [f for f in sim.report.findings if f.code == "overlapping_placement"]


def test_blocks_a_modulo_allocation_rotates_onto_one_tile_while_both_are_live_are_reported_at_the_read():
    x = RNG.standard_normal((4, 128, 64)).astype(np.float32)
    mod = load_kernel(SBUF_ROTATION, display="rotation.py")
    sim = simulate(mod.block_sum, x, tiles=2)
    np.testing.assert_allclose(sim.outputs[0], x.sum(0), rtol=1e-5, atol=1e-5)  # the simulator keeps them apart
    found = _overlaps(sim)
    assert [(f.line, f.severity) for f in found] == [(31, "high")], found
    assert "block (0,)" in found[0].message and "block (2,)" in found[0].message, found[0].message
    assert "rotation.py:19" in found[0].message and "rotation.py:29" in found[0].message, found[0].message
    # an allocation function placing blocks i and i + 2 on one tile is the same defect
    assert [f.line for f in _overlaps(simulate(mod.block_sum, x, by_function=True))] == [31]


def test_rotating_buffers_consumed_before_their_tile_comes_round_again_are_not_reported():
    x = RNG.standard_normal((4, 128, 64)).astype(np.float32)
    mod = load_kernel(SBUF_ROTATION, display="rotation.py")
    assert _overlaps(simulate(mod.block_sum, x, tiles=2))  # the rule sees these tensors (the defect is found)
    for kw in (dict(tiles=4), dict(tiles=2, fused=True), dict(tiles=1, fused=True),
               dict(fused=True, by_function=True)):
        sim = simulate(mod.block_sum, x, **kw)
        np.testing.assert_allclose(sim.outputs[0], x.sum(0), rtol=1e-5, atol=1e-5)
        assert _overlaps(sim) == [], kw


# Two matmul results in PSUM blocks of a modulo allocation over `banks` banks, and an accumulation group
# (`acc[...] += nc_matmul`) in a bank given by an allocation function. `early`: each result is copied out
# before the next matmul (legal on one bank); `interleave`: another tensor's matmul lands in the accumulator's
# bank between two steps of its group; `acc_bank` puts the accumulator in a bank the products used before.
PSUM_BANKS = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim


@nki.jit
def products(a, b, banks=2, early=False, interleave=False, acc_bank=2):
    K, M = a.shape
    _, N = b.shape
    out = nl.ndarray((3, M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a_t = nl.ndarray((par_dim(K), M), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    b_t = nl.ndarray((par_dim(K), N), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=M * 4))
    res = nl.ndarray((3, par_dim(M), N), dtype=nl.float32,
                     buffer=ncc.sbuf.mod_alloc(base_addr=(M + N) * 4, num_free_tiles=(3,)))
    ps = nl.ndarray((2, par_dim(M), N), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(banks,)))
    acc = nl.ndarray((par_dim(M), N), dtype=nl.float32, buffer=ncc.psum.alloc(lambda idx, p, f: (3 if interleave else acc_bank, 0, 0)))
    tmp = nl.ndarray((par_dim(M), N), dtype=nl.float32, buffer=ncc.psum.alloc(lambda idx, p, f: (3, 0, 0)))
    a_t[...] = nl.load(a)
    b_t[...] = nl.load(b)
    if early:
        for i in nl.sequential_range(2):
            ps[i] = nisa.nc_matmul(a_t, b_t)
            res[i] = nl.copy(ps[i])
    else:
        ps[0] = nisa.nc_matmul(a_t, b_t)
        ps[1] = nisa.nc_matmul(a_t, b_t)
        res[0] = nl.copy(ps[0])
        res[1] = nl.copy(ps[1])
    acc[...] += nisa.nc_matmul(a_t, b_t)
    tmp[...] = nisa.nc_matmul(a_t, b_t)
    acc[...] += nisa.nc_matmul(a_t, b_t)
    res[2] = nl.copy(acc)
    for i in nl.affine_range(3):
        nl.store(out[i], value=res[i])
    return out
'''


def test_psum_blocks_on_one_bank_and_a_group_another_matmul_lands_in_are_reported():
    a = RNG.standard_normal((128, 64)).astype(np.float32)
    b = RNG.standard_normal((128, 128)).astype(np.float32)
    mod = load_kernel(PSUM_BANKS, display="banks.py")
    want = a.T @ b
    sim = simulate(mod.products, a, b, banks=1)
    np.testing.assert_allclose(sim.outputs[0][0], want, rtol=1e-4, atol=1e-4)
    assert [f.line for f in _overlaps(sim)] == [30], _overlaps(sim)  # ps[0] read after ps[1] took its bank
    # the second step of acc's group adds onto the bank tmp's matmul wrote over
    assert [f.line for f in _overlaps(simulate(mod.products, a, b, interleave=True))] == [34]


def test_psum_blocks_double_buffered_over_their_banks_or_copied_out_in_time_are_not_reported():
    a = RNG.standard_normal((128, 64)).astype(np.float32)
    b = RNG.standard_normal((128, 128)).astype(np.float32)
    mod = load_kernel(PSUM_BANKS, display="banks.py")
    assert _overlaps(simulate(mod.products, a, b, banks=1))  # the rule sees these tensors (the defect is found)
    # acc_bank=0: acc's group starts in the bank ps[0] used once ps[0] was copied out (its first matmul overwrites)
    for kw in (dict(banks=2), dict(banks=1, early=True), dict(banks=2, early=True, acc_bank=0)):
        sim = simulate(mod.products, a, b, **kw)
        np.testing.assert_allclose(sim.outputs[0][2], 2 * (a.T @ b), rtol=1e-4, atol=1e-4)
        assert _overlaps(sim) == [], kw


# Two PSUM tiles on one bank used in turn, twice: `a` is written in four column pieces (transposes of four
# 32-row slices, as attention kernels fill a PSUM tile), copied out, then `b` takes the bank. In the second round
# `a`'s four pieces together rewrite all that `b` wrote over before `a` is read: no live values are lost.
# `skip`: the second round leaves out one piece, so `a`'s read takes that piece's stale bytes from `b`.
PSUM_PIECES = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.compiler as ncc
from neuronxcc.nki.language import par_dim


@nki.jit
def rounds(x, skip=False):
    P, F = x.shape
    out = nl.ndarray((2, 2, F, P), dtype=nl.float32, buffer=nl.shared_hbm)
    x_t = nl.ndarray((par_dim(P), F), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    res = nl.ndarray((4, par_dim(F), P), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=F * 4, num_free_tiles=(4,)))
    a = nl.ndarray((par_dim(F), P), dtype=nl.float32, buffer=ncc.psum.alloc(lambda idx, p, f: (0, 0, 0)))
    b = nl.ndarray((par_dim(F), P), dtype=nl.float32, buffer=ncc.psum.alloc(lambda idx, p, f: (0, 0, 0)))
    x_t[...] = nl.load(x)
    for r in nl.sequential_range(2):
        for k in nl.sequential_range(4):
            if not (skip and r == 1 and k == 3):
                a[:, k * 32:(k + 1) * 32] = nisa.nc_transpose(x_t[k * 32:(k + 1) * 32, :])
        res[2 * r] = nl.copy(a)
        b[...] = nisa.nc_transpose(x_t)
        res[2 * r + 1] = nl.copy(b)
    for r in nl.affine_range(2):
        for j in nl.affine_range(2):
            nl.store(out[r, j], value=res[2 * r + j])
    return out
'''


def test_a_psum_tile_rewritten_in_pieces_after_another_used_its_bank_is_not_reported_unless_a_piece_is_missing():
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    mod = load_kernel(PSUM_PIECES, display="pieces.py")
    sim = simulate(mod.rounds, x)
    np.testing.assert_allclose(sim.outputs[0][1, 0], x.T, rtol=1e-6)
    assert _overlaps(sim) == []
    found = _overlaps(simulate(mod.rounds, x, skip=True))
    assert [f.line for f in found] == [22], found
    assert "bytes 384-511" in found[0].message, found[0].message  # the missing piece: columns 96-127 of fp32


def test_a_rotation_of_hundreds_of_blocks_over_two_tiles_is_checked_at_the_read_and_legal_reuse_is_not_reported():
    """A modulo allocator rotating hundreds of blocks over a few tiles (a public pipelined attention puts
    2,048-block PSUM tensors on 8 banks). Each read looks only at the last writes to its own bytes, so such a
    tensor is placed and checked like a small one: before per-address histories each read scanned every tile
    sharing its bytes, and past 64 sharers the tensor was left unchecked."""
    n = 160  # two tiles, each shared by 80 blocks
    x = RNG.standard_normal((n, 128, 8)).astype(np.float32)
    mod = load_kernel(SBUF_ROTATION, display="rotation.py")
    sim = simulate(mod.block_sum, x, tiles=2)  # all 160 loaded, then summed: block 158 sits on block 0's bytes
    np.testing.assert_allclose(sim.outputs[0], x.sum(0), rtol=1e-4, atol=1e-4)  # the simulator keeps them apart
    found = _overlaps(sim)
    assert [(f.line, f.severity) for f in found] == [(31, "high")], found
    # the tile whose values the read sees on hardware is named: the last of the 79 blocks written over block 0
    assert "block (0,)" in found[0].message and "block (158,)" in found[0].message, found[0].message
    assert _overlaps(simulate(mod.block_sum, x, tiles=2, fused=True)) == []  # each consumed before its tile returns


def test_a_slot_history_split_past_its_bound_stops_checking_instead_of_guessing():
    """A slot keeps its last writers as disjoint boxes; writes that split it into more than `_MAX_PIECES`
    boxes (byte-by-byte writes across partitions) end the checking of that slot rather than merging boxes,
    which could name a tile as the last writer of bytes it never wrote (a false high finding)."""
    import weakref

    from evidence.nki.placement import _MAX_PIECES, Placement, Slot

    slot = Slot((0, 128, 0, 4096))
    a = Placement("sbuf", slot.box, ("k.py", 1), None, "a")
    b = Placement("sbuf", slot.box, ("k.py", 2), None, "b")
    slot.wrote(slot.box, weakref.ref(a), 1, ("k.py", 3))
    slot.wrote((0, 128, 0, 8), weakref.ref(b), 2, ("k.py", 4))
    assert sorted(slot.last) == [(0, 128, 0, 8), (0, 128, 8, 4096)]  # b over a's first 8 bytes, a keeps the rest
    for i in range(_MAX_PIECES):
        slot.wrote((i % 128, i % 128 + 1, 16 + 8 * i, 20 + 8 * i), weakref.ref(b), 3 + i, ("k.py", 5))
    assert slot.lost and slot.last == {}
    slot.wrote(slot.box, weakref.ref(a), 10_000, ("k.py", 6))
    assert slot.last == {}  # stays lost for the rest of the run
