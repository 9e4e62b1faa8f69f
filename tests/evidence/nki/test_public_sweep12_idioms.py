"""What the twelfth public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import load_kernel, simulate
from evidence.nki.errors import SimulationError

RNG = np.random.default_rng(112)

# A strided window over a row loaded with its halo (a convolution along W with stride 2): the slice's stop,
# start + width * stride, runs one past the row, but the last element it takes, start + (width - 1) * stride,
# is inside. Both dialects; the beta one also with a unit-stride slice that truly runs past the row.
STRIDED_WINDOW = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def every_other_from(x, offset):
    P, F = x.shape
    width = (F - offset + 1) // 2
    out = nl.ndarray((P, width), dtype=x.dtype, buffer=nl.shared_hbm)
    row = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=x)
    res = nl.ndarray((P, width), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=row[:, offset:offset + width * 2:2])
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def unit_stride_past_end(x):
    P, F = x.shape
    out = nl.ndarray((P, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    row = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=row, src=x)
    res = nl.ndarray((P, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=row[:, F - 4:F + 4])
    nisa.dma_copy(dst=out, src=res)
    return out
'''

BETA_STRIDED_WINDOW = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def every_other_from(x, offset):
    P, F = x.shape
    width = (F - offset + 1) // 2
    out = nl.ndarray((P, width), dtype=x.dtype, buffer=nl.shared_hbm)
    row = nl.load(x)
    nl.store(out, value=nl.copy(row[:, offset:offset + width * 2:2]))
    return out
'''


@pytest.mark.parametrize("source", [STRIDED_WINDOW, BETA_STRIDED_WINDOW], ids=["nki", "beta"])
@pytest.mark.parametrize("offset", [1, 2])
def test_strided_slice_whose_stop_passes_the_end_takes_only_elements_inside(source, offset):
    x = RNG.standard_normal((64, 33)).astype(np.float32)  # offset 1: 16 taken, stop 33 = F; offset 2: stop 34
    sim = simulate(load_kernel(source, display="window.py").every_other_from, x, offset)
    np.testing.assert_array_equal(sim.outputs[0], x[:, offset::2])


def test_slice_reaching_past_the_end_still_stops_with_the_last_index_named():
    x = RNG.standard_normal((64, 32)).astype(np.float32)
    with pytest.raises(SimulationError) as err:
        simulate(load_kernel(STRIDED_WINDOW, display="window.py").unit_stride_past_end, x)
    assert err.value.code == "err_tensor_access_out_of_bound"
    assert "index range [28, 35] exceed dimension size of 32" in str(err.value)


# A shape check through an assertion helper, as nki-library writes them (`kernel_assert(cond, msg)` wraps a bare
# `assert`), beside a bare assert in the kernel body: the error names the line of the check that failed.
CHECKED = '''
import nki
import nki.isa as nisa
import nki.language as nl


def kernel_assert(condition, error_text):
    assert condition, f"Kernel validation exception: {error_text}"


def reserve(budget, nbytes):
    kernel_assert(nbytes <= budget, "Heap out of memory")
    return budget - nbytes


@nki.jit
def copy_rows(x, budget):
    P, F = x.shape
    reserve(budget, F * 4)
    assert P <= 128, "too many rows"
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def _line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_failed_assertion_helper_is_placed_at_the_check_that_called_it():
    mod = load_kernel(CHECKED, display="checked.py")
    with pytest.raises(SimulationError) as err:
        simulate(mod.copy_rows, np.zeros((64, 64), np.float32), 100)
    assert err.value.code == "python_error" and "Heap out of memory" in str(err.value)
    assert err.value.line == _line_of(CHECKED, 'kernel_assert(nbytes <= budget')
    with pytest.raises(SimulationError) as err:
        simulate(mod.copy_rows, np.zeros((130, 8), np.float32), 100)
    assert err.value.line == _line_of(CHECKED, 'assert P <= 128')  # a bare assert stays where it is


# Indirect DMA by element offset, as nki-library's deformable attention gathers sampled values: the table is
# viewed as 1-D (`.reshape((n,))`), so an offset counts elements, not rows of the [rows, C] allocation; and an
# offset tile of several columns feeds the pattern's rows column by column (row j * 128 + p takes offsets[p, j]).
GATHER = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gather_by_element_offset(table, offsets):
    R, C = table.shape
    P, J = offsets.shape
    out = nl.ndarray((C, J * P), dtype=table.dtype, buffer=nl.shared_hbm)
    idx = nl.ndarray((P, J), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=offsets)
    got = nl.ndarray((C, J * P), dtype=table.dtype, buffer=nl.sbuf)
    flat = table.reshape((R * C,))
    nisa.dma_transpose(dst=got, src=flat.ap(pattern=[[C, J * P], [1, C]], offset=0, vector_offset=idx,
                                            indirect_dim=0), axes=(1, 0))
    nisa.dma_copy(dst=out, src=got)
    return out
'''


@pytest.mark.parametrize("columns", [1, 3])
def test_vector_offsets_count_elements_of_a_reshaped_view_column_by_column(columns):
    rows, width = 40, 16
    table = RNG.standard_normal((rows, width)).astype(np.float32)
    offsets = (RNG.integers(0, rows, (128, columns)) * width).astype(np.uint32)  # element offsets of row starts
    sim = simulate(load_kernel(GATHER, display="gather.py").gather_by_element_offset, table, offsets)
    order = offsets.T.reshape(-1) // width  # column j's 128 offsets, then column j + 1's
    np.testing.assert_array_equal(sim.outputs[0], table[order].T)


# A cross-core reduction without a barrier (the deformable backward sums every core's partial buffers at its end):
# instance 0, run first, reads the half instance 1 has not written yet. The finding says so; a read of scratch no
# instance ever writes, in a one-instance run, keeps the plain message.
HALVES = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def halves_then_sum(x):
    out = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    part = nl.ndarray((2, 64, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    t = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[i])
    nisa.dma_copy(dst=part[i], src=t)
    nisa.dma_compute(dst=out, srcs=[part[0], part[1]], reduce_op=nl.add)
    return out


@nki.jit
def reads_scratch(x):
    out = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    scratch = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 32), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=scratch)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def _uninitialized(sim) -> list[str]:
    return [f.message for f in sim.report.findings if f.code == "uninitialized_read"]


def test_read_before_another_spmd_instance_writes_is_named_as_such():
    mod = load_kernel(HALVES, display="halves.py")
    x = RNG.standard_normal((2, 64, 32)).astype(np.float32)
    sim = simulate(mod.halves_then_sum, x, grid=(2,))
    np.testing.assert_allclose(sim.outputs[0], x[0] + x[1], rtol=1e-6)  # the last instance's sum is right
    (msg,) = _uninitialized(sim)
    assert "SPMD instance [0] of a grid of [2]" in msg and "barrier" in msg
    (plain,) = _uninitialized(simulate(mod.reads_scratch, x[0]))
    assert "SPMD" not in plain
