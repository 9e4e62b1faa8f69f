"""Semantics the third public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from evidence.nki import SimulationError, UnsupportedOpError, load_kernel, simulate

RNG = np.random.default_rng(23)
_PROLOGUE = '''
import nki
import nki.isa as nisa
import nki.language as nl
'''
_LOAD_X = '''    p, f = x.shape
    x_sb = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
'''

ROW_BROADCAST = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def offset_rows(x, row):
    p, f = x.shape
    row_sb = nl.ndarray((1, f), dtype=row.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row_sb, src=row)
    wide = nl.broadcast_to(row_sb, (p, f), nl.float32)
    x_sb = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    res = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=res, data1=x_sb, data2=wide, op=nl.subtract)
    out = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def test_standalone_broadcast_to_takes_shape_and_dtype_positionally():
    x = RNG.standard_normal((64, 24)).astype(np.float32)
    row = RNG.integers(-5, 5, (1, 24)).astype(np.int32)
    sim = simulate(load_kernel(ROW_BROADCAST, display="bc.py").offset_rows, x, row)
    np.testing.assert_allclose(sim.outputs[0], x - row.astype(np.float32), rtol=1e-6, atol=1e-6)


def test_beta_broadcast_to_with_a_positional_shape_is_a_kernel_error_at_its_line():
    beta = ROW_BROADCAST.replace("import nki\n", "from neuronxcc import nki\n").replace(
        "import nki.isa", "import neuronxcc.nki.isa").replace("import nki.language", "import neuronxcc.nki.language")
    with pytest.raises(SimulationError) as err:
        simulate(load_kernel(beta, display="bc.py").offset_rows, np.zeros((8, 4), np.float32), np.zeros((1, 4), np.int32))
    assert err.value.code == "err_broadcast_to_arguments" and (err.value.file, err.value.line) == ("bc.py", 12)
    assert "shape=" in err.value.message


ROW_ABSMAX = _PROLOGUE + '''

@nki.jit
def row_absmax(x, offset):
''' + _LOAD_X + '''    mags = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    amax = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=mags, data=x_sb, op0=nl.abs, operand0=offset, reduce_op=nl.maximum,
                              reduce_res=amax)
    both = nl.ndarray((p, f + 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=both[:, 0:f], data=x_sb, op0=nl.abs, operand0=0.0, op1=nl.multiply, operand1=2.0)
    nisa.tensor_copy(dst=both[:, f:f + 1], src=amax)
    out = nl.ndarray((p, f + 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=both)
    return out
'''


def test_abs_is_an_operand_free_alu_operator_of_tensor_scalar_and_its_reduce():
    x = RNG.standard_normal((32, 40)).astype(np.float32)
    sim = simulate(load_kernel(ROW_ABSMAX, display="amax.py").row_absmax, x, 0.0)
    np.testing.assert_array_equal(sim.outputs[0][:, :40], 2 * np.abs(x))
    np.testing.assert_array_equal(sim.outputs[0][:, 40], np.abs(x).max(axis=1))


def test_abs_with_a_nonzero_operand_is_not_guessed():
    with pytest.raises(SimulationError) as err:
        simulate(load_kernel(ROW_ABSMAX, display="amax.py").row_absmax, np.ones((8, 4), np.float32), 1.5)
    assert err.value.code == "err_unsupported_op_argument" and (err.value.file, err.value.line) == ("amax.py", 14)
    assert "abs" in err.value.message and "1.5" in err.value.message


PACKED_SCALES = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def packed_row_max(x):
    n, f = x.shape
    x_sb = nl.ndarray((128, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb[0:n, :], src=x)
    # the whole tile, garbage rows included (only the first n rows are stored)
    rmax = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=rmax, op=nl.maximum, data=x_sb, axis=1)
    packed = nl.ndarray((n, 4), dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=packed, src=rmax.view(nl.float8_e4m3)[0:n, :])
    wide = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=wide, src=rmax)
    return packed, wide
'''


def test_fp32_bytes_stored_through_an_fp8_view_are_not_taken_for_undefined_data():
    # each row's max has the byte 0x7F, a NaN pattern of fp8 e4m3, when its fp32 bytes are read as fp8
    special = np.frombuffer(bytes([0x7F, 0x00, 0x80, 0x3F]), "<f4")[0]
    x = RNG.uniform(-0.5, 0.5, (20, 16)).astype(np.float32)
    x[:, 3] = special
    sim = simulate(load_kernel(PACKED_SCALES, display="packed.py").packed_row_max, x)
    packed, wide = sim.outputs
    np.testing.assert_array_equal(np.asarray(packed).view(np.float32).ravel(), np.full(20, special, np.float32))
    # the unmasked store of all 128 rows does carry the garbage rows out: that finding stays, at the reduce
    found = [(f.code, f.line) for f in sim.report.findings if f.code == "uninitialized_read"]
    assert found == [("uninitialized_read", 14)]
    assert "[128, 1]" in [f for f in sim.report.findings if f.code == "uninitialized_read"][0].message


COMPILER_INTERNALS = '''
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.language as nl
from neuronxcc.nki.language.constants import sizeinbytes
from neuronxcc.nki.compiler.backends.neuron.indexing import TileIndex
from neuronxcc.nki.compiler.backends.neuron.tensor import local_tile


def shifted(idx: TileIndex, by: int) -> TileIndex:
    return idx + by


@nki.jit
def pack_words(x, use_internal=False):
    # as many bf16 halves per row as fit the bytes of one fp32 word
    per_word = sizeinbytes(np.float32) // sizeinbytes(nl.bfloat16)
    out = nl.ndarray((x.shape[0], per_word), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:x.shape[0], 0:per_word]
    if use_internal:
        local_tile(x)
    nl.store(out[i_p, i_f], nl.load(x[i_p, shifted(i_f, 1)]))
    return out
'''


def test_beta_compiler_internal_imports_for_type_hints_and_byte_sizes():
    x = RNG.standard_normal((16, 6)).astype(np.float32)
    mod = load_kernel(COMPILER_INTERNALS, display="internals.py")
    np.testing.assert_array_equal(simulate(mod.pack_words, x).outputs[0], x[:, 1:3])
    with pytest.raises(UnsupportedOpError) as err:
        simulate(mod.pack_words, x, True)
    assert err.value.code == "unsupported_op" and "local_tile" in err.value.message
    assert (err.value.file, err.value.line) == ("internals.py", 21)


RING_STEP = _PROLOGUE + '''import nki.collectives as cc


@nki.jit
def ring_step(x, group):
''' + _LOAD_X + '''    out = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.shared_hbm)
    if group is not None:
        cc.collective_permute_implicit(srcs_by_channel=[[x]], dsts_by_channel=[[out]], replica_group=group)
    nisa.dma_copy(dst=out, src=x_sb)
    return out
'''


def test_nki_collectives_imports_and_its_calls_are_unsupported_op_at_their_line():
    mod = load_kernel(RING_STEP, display="ring.py")
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    np.testing.assert_array_equal(simulate(mod.ring_step, x, None).outputs[0], x)
    with pytest.raises(UnsupportedOpError) as err:
        simulate(mod.ring_step, x, 1)
    assert (err.value.code, err.value.file, err.value.line) == ("unsupported_op", "ring.py", 15)
    assert "nki.collectives.collective_permute_implicit" in err.value.message


PACKED_OPERAND = _PROLOGUE + '''

@nki.jit
def packed_matmul(words, w):
    sb = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=sb, src=words)
    codes = sb.view(nl.float8_e4m3).reshape((128, 2, 128))[:, 1, :]
    w_sb = nl.ndarray((128, 96), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_sb, src=w)
    acc = nl.ndarray((128, 96), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=codes, moving=w_sb)
    res = nl.ndarray((128, 96), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    out = nl.ndarray((128, 96), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def test_a_slice_of_a_dtype_view_keeps_the_views_dtype():
    # fp8 codes packed four to an fp32 word, used as a matmul operand after view, reshape and slice
    codes = RNG.integers(0, 0x70, (128, 256)).astype(np.uint8)  # finite fp8 e4m3 values
    w = RNG.standard_normal((128, 96)).astype(ml_dtypes.float8_e4m3)
    sim = simulate(load_kernel(PACKED_OPERAND, display="packed_mm.py").packed_matmul, codes.view(np.float32), w)
    a = codes.view(ml_dtypes.float8_e4m3).astype(np.float32)[:, 128:]
    wf = w.astype(np.float32)
    # fp8 products are exact in fp32; the 128-term sums may round in another order than numpy's BLAS
    # (which depends on the host's BLAS kernel): bound by K * eps * sum |a||w| per element
    bound = 128 * 2.0**-24 * (np.abs(a).T @ np.abs(wf))
    assert (np.abs(sim.outputs[0] - a.T @ wf) <= bound).all()
    assert not sim.report.findings  # both operands are fp8: no "mixes float32 and float8" finding
