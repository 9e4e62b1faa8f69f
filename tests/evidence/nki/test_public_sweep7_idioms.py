"""Semantics the seventh public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np

import pytest

from evidence.nki import SimulationError, load_kernel, simulate

RNG = np.random.default_rng(71)

# A ragged tile loaded under a mask (its last partitions never written), transposed on TensorE in transpose
# mode against an identity, transposed back, and stored under the same mask: each valid row only ever meets
# its own elements.
RAGGED_TRANSPOSE = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def ragged_roundtrip(x):
    n, f = x.shape
    out = nl.ndarray((n, f), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:128]
    eye = nl.shared_constant(np.identity(128, dtype=np.int8), dtype=x.dtype)
    ident = nl.load(eye)
    t = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    t[ip, jf] = nl.load(x[ip, jf], mask=ip < n)
    tt = nl.copy(nisa.nc_matmul(t, ident, is_transpose=True), dtype=x.dtype)
    back = nl.copy(nisa.nc_matmul(tt, ident, is_transpose=True), dtype=x.dtype)
    nl.store(out[ip, jf], value=nl.multiply(back, 2.0), mask=ip < n)
    return out
'''


def test_transpose_mode_keeps_undefined_partitions_in_place_on_v3():
    # NeuronCore-v3 transposes bit-exactly (NaN/Inf stay where they are): the unwritten partitions of the ragged
    # tile must not reach the valid rows; on v2 the transpose is a matmul with the identity and they do
    mod = load_kernel(RAGGED_TRANSPOSE, display="ragged.py")
    x = RNG.standard_normal((72, 128)).astype(np.float32)
    got = simulate(mod.ragged_roundtrip, x, target="trn2").outputs[0]
    np.testing.assert_array_equal(got, 2 * x)
    v2 = simulate(mod.ragged_roundtrip, x, target="trn1").outputs[0]
    assert np.isnan(v2).all()


# neuronx-cc's numpy bfloat16 scalar type, imported by name from the compiler package (nki-samples' kernels and tests)
STARFISH_BF16 = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.starfish.support.dtype import bfloat16


@nki.jit
def halve(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, nl.multiply(t, np.asarray(0.5, dtype=bfloat16), dtype=x.dtype))
    return out
'''


def test_starfish_bfloat16_import_is_the_numpy_bfloat16_type():
    mod = load_kernel(STARFISH_BF16, display="halve.py")
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    got = simulate(mod.halve, x).outputs[0]
    np.testing.assert_array_equal(got, x * 0.5)


# Every PSUM bank pinned by direct allocation, each block written by a matmul bound straight into it (`=` and `+=`),
# all blocks live until the end: 8 banks, as on hardware, where the matmul writes its destination directly
ALL_BANKS = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def bank_of(idx, parts, fbytes):
    return (idx[0], 0, 0)


@nki.jit
def all_banks(a, b):
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    blocks = nl.ndarray((8, nl.par_dim(128), 512), dtype=np.float32, buffer=ncc.psum.alloc(bank_of))
    for i in nl.affine_range(8):
        blocks[i] = nisa.nc_matmul(at, bt)
        blocks[i] += nisa.nc_matmul(at, bt)
    acc = nl.zeros((128, 512), dtype=np.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(8):
        acc[...] = nl.add(acc, blocks[i])
    nl.store(out, acc)
    return out
'''

KEPT_RESULT = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def kept(a, b):
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    acc = nl.zeros((128, 512), dtype=np.float32, buffer=nl.psum)
    r = nisa.nc_matmul(at, bt)
    acc[...] = r
    both = nl.add(acc, r)
    nl.store(out, both)
    return out
'''


def test_a_matmul_bound_into_pinned_psum_takes_no_bank_of_its_own():
    a = RNG.standard_normal((128, 128)).astype(np.float32)
    b = RNG.standard_normal((128, 512)).astype(np.float32)
    sim = simulate(load_kernel(ALL_BANKS, display="banks.py").all_banks, a, b)
    np.testing.assert_allclose(sim.outputs[0], 16 * (a.T @ b), rtol=2e-5, atol=1e-3)
    assert sim.report.psum_peak_banks == 8
    assert "psum_capacity_exceeded" not in {f.code for f in sim.report.findings}
    # a result read again after it was bound is a tile of its own: both count
    sim = simulate(load_kernel(KEPT_RESULT, display="kept.py").kept, a, b)
    np.testing.assert_allclose(sim.outputs[0], 2 * (a.T @ b), rtol=2e-5, atol=1e-3)
    assert sim.report.psum_peak_banks == 2


# 64 logical [128, 2048] fp32 blocks (512 KiB per partition) rotating through 2 physical SBUF tiles by modulo
# allocation: the tensor holds 16 KiB per partition
ROTATING_SBUF = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.language as nl


@nki.jit
def rotating(x):
    out = nl.ndarray((128, 2048), dtype=np.float32, buffer=nl.shared_hbm)
    blocks = nl.ndarray((64, nl.par_dim(128), 2048), dtype=np.float32, buffer=PLACE)
    acc = nl.zeros((128, 2048), dtype=np.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(64):
        blocks[i] = nl.load(x)
        acc[...] = nl.add(acc, blocks[i])
    nl.store(out, acc)
    return out
'''


def test_modulo_allocated_sbuf_holds_its_physical_tiles_only():
    x = RNG.standard_normal((128, 2048)).astype(np.float32)
    mod = load_kernel(ROTATING_SBUF.replace("PLACE", "ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,))"),
                      display="rotating.py")
    sim = simulate(mod.rotating, x)
    np.testing.assert_allclose(sim.outputs[0], 64 * x, rtol=1e-5)
    assert sim.report.sbuf_peak_bytes_per_partition <= 4 * 2048 * 4
    assert "sbuf_capacity_exceeded" not in {f.code for f in sim.report.findings}
    # left to the compiler, a block-dimension tensor is counted whole: the capacity finding stays
    sim = simulate(load_kernel(ROTATING_SBUF.replace("PLACE", "nl.sbuf"), display="rotating.py").rotating, x)
    assert "sbuf_capacity_exceeded" in {f.code for f in sim.report.findings}


# A fixed tiling wider than the data: each 128-column step writes `dst[:, off:off + 128]` under a mask that leaves
# out the columns past the tile's end, so the last step's slice runs past it (beta: the mask makes it legal)
MASKED_SLICE = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def doubled(x):
    n = x.shape[1]
    out = nl.ndarray((128, n), dtype=x.dtype, buffer=nl.shared_hbm)
    src = nl.load(x)
    dst = nl.ndarray((128, n), dtype=x.dtype, buffer=nl.sbuf)
    i_f = nl.arange(128)[None, :]
    for j in nl.affine_range(3):
        dst[:, j * 128:(j + 1) * 128] = nl.multiply(src[nl.arange(128)[:, None], j * 128 + i_f], 2.0, MASK)
    nl.store(out, dst)
    return out
'''


def test_a_slice_past_the_end_is_checked_against_the_instructions_mask():
    x = RNG.standard_normal((128, 300)).astype(np.float32)
    mod = load_kernel(MASKED_SLICE.replace("MASK", "mask=j * 128 + i_f < n"), display="doubled.py")
    np.testing.assert_array_equal(simulate(mod.doubled, x).outputs[0], 2 * x)
    unmasked = load_kernel(MASKED_SLICE.replace(", MASK", ""), display="doubled.py")
    with pytest.raises(SimulationError, match="err_tensor_access_out_of_bound"):
        simulate(unmasked.doubled, x)


# A row sum reduced without keepdims ([P]) transposed into a row and broadcast down the partitions
ROW_OF_SUMS = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def sums_row(x):
    out = nl.ndarray((64, 16), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    s = nisa.tensor_reduce(np.add, data=t, axis=-1, dtype=np.float32)
    row = nl.transpose(s).broadcast_to((64, 16))
    nl.store(out, nl.copy(row))
    return out
'''


def test_transpose_of_a_partition_only_reduction_is_a_row():
    x = RNG.standard_normal((16, 40)).astype(np.float32)
    got = simulate(load_kernel(ROW_OF_SUMS, display="sums_row.py").sums_row, x).outputs[0]
    np.testing.assert_allclose(got, np.broadcast_to(x.sum(axis=1)[None, :], (64, 16)), rtol=1e-5)
