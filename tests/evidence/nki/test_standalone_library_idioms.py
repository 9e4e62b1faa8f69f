"""Idioms of today's standalone-dialect library kernels (nki 0.5-0.7) that the simulator must run:
`nki.tensor` trace-time constants, the `nki.isa.constants` enum module, ... Each kernel here is
written for the test and compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import SimulationError, UnsupportedOpError, load_kernel, simulate

RNG = np.random.default_rng(13)

TRACE_TIME_CONSTANTS = '''
import nki
import nki.isa as nisa
import nki.language as nl
import nki.tensor as ntensor
from nki.isa import constants as consts


@nki.jit
def reverse_rows_plus_ramp(x):
    n, f = x.shape
    # an anti-diagonal permutation built from a trace-time identity, and a 0..f-1 ramp plus one
    flip = nl.shared_constant(ntensor.identity(n, nl.int8)[::-1].copy(), dtype=nl.float32)
    ramp = nl.shared_constant(ntensor.arange(0, f, 1, dtype=nl.int32)[None, :] + ntensor.ones((n, f), nl.int32))
    flip_sb = nl.ndarray((n, n), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=flip_sb, src=flip, dge_mode=consts.dge_mode.hwdge)
    x_sb = nl.ndarray((n, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    ramp_sb = nl.ndarray((n, f), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ramp_sb, src=ramp)
    acc = nl.ndarray((n, f), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=flip_sb, moving=x_sb)
    res = nl.ndarray((n, f), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=res, data1=acc, data2=ramp_sb, op=nl.add, engine=consts.engine.vector)
    out = nl.ndarray((n, f), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def test_trace_time_tensors_and_isa_constants_module():
    x = RNG.standard_normal((32, 16)).astype(np.float32)
    mod = load_kernel(TRACE_TIME_CONSTANTS, display="rev.py")
    sim = simulate(mod.reverse_rows_plus_ramp, x)
    want = x[::-1] + np.arange(1, 17, dtype=np.float32)[None, :]
    np.testing.assert_allclose(sim.outputs[0], want, rtol=1e-6, atol=1e-6)
    assert [f.code for f in sim.report.findings] == []


def test_an_unknown_trace_time_constructor_is_unsupported_op_at_its_line():
    src = TRACE_TIME_CONSTANTS.replace("ntensor.arange(0, f, 1, dtype=nl.int32)", "ntensor.linspace(0, f, f)")
    mod = load_kernel(src, display="rev.py")
    with pytest.raises(UnsupportedOpError) as err:
        simulate(mod.reverse_rows_plus_ramp, RNG.standard_normal((32, 16)).astype(np.float32))
    assert err.value.code == "unsupported_op" and "nki.tensor.linspace" in err.value.message
    assert (err.value.file, err.value.line) == ("rev.py", 14)


OPTIONAL_TENSOR_ARGUMENT = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale_then_maybe_shift(x, shift=None):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    if shift != None:
        s = nl.ndarray(shift.shape, dtype=shift.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=shift)
        nisa.tensor_tensor(dst=t, data1=t, data2=s, op=nl.add)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


@pytest.mark.parametrize("with_shift", [True, False])
def test_comparing_a_tensor_with_none_is_a_python_test(with_shift):
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    shift = RNG.standard_normal((16, 8)).astype(np.float32)
    mod = load_kernel(OPTIONAL_TENSOR_ARGUMENT, display="opt.py")
    sim = simulate(mod.scale_then_maybe_shift, x, shift if with_shift else None)
    np.testing.assert_allclose(sim.outputs[0], 2 * x + (shift if with_shift else 0), rtol=1e-6)


def test_jit_accepts_platform_target_but_not_mode():
    src = OPTIONAL_TENSOR_ARGUMENT.replace("@nki.jit\n", '@nki.jit(platform_target="trn2")\n')
    mod = load_kernel(src, display="opt.py")
    x = RNG.standard_normal((16, 8)).astype(np.float32)
    np.testing.assert_allclose(simulate(mod.scale_then_maybe_shift, x).outputs[0], 2 * x, rtol=1e-6)
    with pytest.raises(Exception) as err:
        load_kernel(OPTIONAL_TENSOR_ARGUMENT.replace("@nki.jit\n", '@nki.jit(mode="simulation")\n'), display="opt.py")
    assert "err_removed_argument" in str(err.value)


TENSOR_VIEW_METHODS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rows_scaled_then_swapped(x, scale):
    # x: [2, 24, 12] in HBM: rows of both batches, scaled per column, written back with the last two axes split
    # and swapped; scale: [1, 12]
    b, s, h = x.shape
    rows = x.flatten_dims(start_dim=0, end_dim=1)           # [48, 12]
    top = rows.slice(dim=0, start=8, end=40, step=2)           # [16, 12]: rows 8, 10, ..., 38
    t = nl.ndarray((16, h), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=top)
    sc = nl.ndarray((16, 1, h), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=sc, src=scale.expand_dim(1).broadcast(dim=0, size=16))
    prod = nl.ndarray((16, 3, 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=prod.flatten_dims(start_dim=1, end_dim=2), data1=t, data2=sc.squeeze_dim(1), op=nl.multiply)
    swapped = nl.ndarray((16, 4, 3), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=swapped, src=prod.permute(dims=[0, 2, 1]))
    out = nl.ndarray((16, 12), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out.reshape_dim(dim=1, shape=(4, -1)), src=swapped)
    first = nl.ndarray((1, 12), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=first, src=x.select(dim=0, index=1).slice(dim=0, start=0, end=1))
    return out, first
'''


def test_tensor_view_methods_match_numpy_views():
    x = RNG.standard_normal((2, 24, 12)).astype(np.float32)
    scale = RNG.standard_normal((1, 12)).astype(np.float32)
    mod = load_kernel(TENSOR_VIEW_METHODS, display="views.py")
    out, first = simulate(mod.rows_scaled_then_swapped, x, scale).outputs
    rows = x.reshape(48, 12)[8:40:2] * scale
    np.testing.assert_allclose(out, rows.reshape(16, 3, 4).transpose(0, 2, 1).reshape(16, 12), rtol=1e-6)
    np.testing.assert_allclose(first, x[1, :1], rtol=0)


@pytest.mark.parametrize("call, message", [
    ("t.permute(dims=[1, 0, 2])", "partition dimension"),
    ("t.flatten_dims(start_dim=0, end_dim=1)", "partition dimension"),
    ("t.slice(dim=1, start=0, end=8, step=2).flatten_dims(start_dim=1, end_dim=2)", "not contiguous"),
    ("t.broadcast(dim=1, size=4)", "size-4 dimension"),
])
def test_view_methods_reject_what_nki_rejects(call, message):
    src = TENSOR_VIEW_METHODS.replace(
        "    rows = x.flatten_dims", f"    t = nl.ndarray((16, 4, 3), dtype=x.dtype, buffer=nl.sbuf)\n    v = {call}\n"
        "    rows = x.flatten_dims")
    mod = load_kernel(src, display="views.py")
    with pytest.raises(SimulationError) as err:
        simulate(mod.rows_scaled_then_swapped, RNG.standard_normal((2, 24, 12)).astype(np.float32),
                 RNG.standard_normal((1, 12)).astype(np.float32))
    assert message in err.value.message and (err.value.file, err.value.line) == ("views.py", 13)


HALVES_THEN_BARRIER = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def negate_by_halves(x):
    n, f = x.shape
    out = nl.ndarray((n, f), dtype=x.dtype, buffer=nl.shared_hbm)
    half = n // nl.num_programs(axes=0)
    lo = nl.program_id(axis=0) * half
    t = nl.ndarray((half, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[lo:lo + half, :])
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=-1.0)
    nisa.dma_copy(dst=out[lo:lo + half, :], src=t)
    nisa.core_barrier(data=BARRIER_ON, cores=(0, 1))
    return out
'''


def test_core_barrier_orders_disjoint_writes_of_two_cores():
    x = RNG.standard_normal((64, 8)).astype(np.float32)
    mod = load_kernel(HALVES_THEN_BARRIER.replace("BARRIER_ON", "out"), display="halves.py")
    np.testing.assert_array_equal(simulate(mod.negate_by_halves, x, grid=(2,)).outputs[0], -x)
    with pytest.raises(SimulationError) as err:  # NeuronCore-v3 or newer only
        simulate(mod.negate_by_halves, x, grid=(2,), target="trn1")
    assert err.value.code == "err_unsupported_on_target" and err.value.line == 17
    on_input = load_kernel(HALVES_THEN_BARRIER.replace("BARRIER_ON", "x"), display="halves.py")
    with pytest.raises(SimulationError) as err:  # inputs are not nl.shared_hbm tensors the kernel made
        simulate(on_input.negate_by_halves, x, grid=(2,))
    assert err.value.line == 17


def test_an_isa_instruction_the_simulator_lacks_is_unsupported_op_even_without_dst():
    src = HALVES_THEN_BARRIER.replace("nisa.core_barrier(data=BARRIER_ON, cores=(0, 1))",
                                      "nisa.barrier_of_the_future(data=out)")
    mod = load_kernel(src, display="halves.py")
    with pytest.raises(UnsupportedOpError) as err:
        simulate(mod.negate_by_halves, RNG.standard_normal((64, 8)).astype(np.float32), grid=(2,))
    assert "barrier_of_the_future" in err.value.message and err.value.line == 17


SHIFT_AND_MASK = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def high_bits_and_low_bits(x):
    n, f = x.shape
    t = nl.ndarray((n, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    hi = nl.ndarray((n, f), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=hi, data=t, op0=nl.right_shift, operand0=SHIFT, op1=nl.bitwise_xor, operand1=5)
    lo = nl.ndarray((n, f), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=lo, data=t, op0=nl.bitwise_and, operand0=0xFF)
    out = nl.ndarray((2, n, f), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[0], src=hi)
    nisa.dma_copy(dst=out[1], src=lo)
    return out
'''


def test_tensor_scalar_bitvec_operators_work_on_integer_bits():
    x = RNG.integers(0, 1 << 30, (32, 16)).astype(np.int32)
    mod = load_kernel(SHIFT_AND_MASK.replace("SHIFT", "9"), display="bits.py")
    out = simulate(mod.high_bits_and_low_bits, x).outputs[0]
    np.testing.assert_array_equal(out[0], (x >> 9) ^ 5)  # exact in integers (fp32 would round above 2^24)
    np.testing.assert_array_equal(out[1], x & 0xFF)
    with pytest.raises(SimulationError) as err:
        simulate(mod.high_bits_and_low_bits, x.astype(np.float32))
    assert err.value.code == "err_unsupported_dtype" and err.value.line == 13
    mixed = load_kernel(SHIFT_AND_MASK.replace("SHIFT", "9").replace("op1=nl.bitwise_xor", "op1=nl.add"), display="bits.py")
    with pytest.raises(SimulationError) as err:  # op0 and op1 both bitvec or both arithmetic
        simulate(mixed.high_bits_and_low_bits, x)
    assert err.value.code == "err_invalid_arguments" and err.value.line == 13


RUNTIME_TRIP_COUNT = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def first_rows_doubled(x, rows):
    # rows: [1, 1] int32 in HBM, how many 32-row blocks of x to double at run time; the rest stays zero
    n, f = x.shape
    out = nl.ndarray((n, f), dtype=x.dtype, buffer=nl.shared_hbm)
    zero = nl.ndarray((32, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=zero, value=0.0)
    for b in range(n // 32):
        nisa.dma_copy(dst=out[b * 32:(b + 1) * 32, :], src=zero)
    count = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=count, src=rows)
    reg = nisa.register_alloc()
    nisa.register_load(reg, count)
    start = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=start, value=0)

    def body(i):
        t = nl.ndarray((32, f), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap(pattern=[[f, 32], [1, f]], offset=0, scalar_offset=start, indirect_dim=0))
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out.ap(pattern=[[f, 32], [1, f]], offset=0, scalar_offset=start, indirect_dim=0), src=t)
        nisa.tensor_scalar(dst=start, data=start, op0=nl.add, operand0=32)

    nl.fori_loop(0, reg, body, step=1)
    again = nisa.register_alloc(0)
    nisa.register_move(again, 1)
    for _ in nl.dynamic_range(again):
        nisa.register_store(count, again)
    return out
'''


@pytest.mark.parametrize("blocks", [0, 2, 3])
def test_register_load_bounds_fori_loop_and_dynamic_range_at_run_time(blocks):
    x = RNG.standard_normal((96, 8)).astype(np.float32)
    mod = load_kernel(RUNTIME_TRIP_COUNT, display="trip.py")
    out = simulate(mod.first_rows_doubled, x, np.array([[blocks]], np.int32)).outputs[0]
    want = np.zeros_like(x)
    want[:32 * blocks] = 2 * x[:32 * blocks]
    np.testing.assert_array_equal(out, want)


def test_a_dma_copy_of_an_output_onto_itself_is_a_fence_not_an_undefined_read():
    src = RUNTIME_TRIP_COUNT.replace("    for b in range(n // 32):\n        nisa.dma_copy(dst=out[b * 32:(b + 1) * 32, :], src=zero)\n", "") \
        .replace("    return out\n", "    nisa.dma_copy(dst=out, src=out)\n    return out\n")
    mod = load_kernel(src, display="fence.py")
    x = RNG.standard_normal((96, 8)).astype(np.float32)
    sim = simulate(mod.first_rows_doubled, x, np.array([[1]], np.int32))
    np.testing.assert_array_equal(sim.outputs[0][:32], 2 * x[:32])
    assert "uninitialized_read" not in [f.code for f in sim.report.findings]
    # copying the never-written rows somewhere else is still reading undefined data into HBM
    other = load_kernel(src.replace("nisa.dma_copy(dst=out, src=out)", "nisa.dma_copy(dst=out[0:32, :], src=out[64:96, :])"),
                        display="fence.py")
    sim = simulate(other.first_rows_doubled, x, np.array([[1]], np.int32))
    assert "uninitialized_read" in [f.code for f in sim.report.findings]


ROW_STATS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def per_group_sums(x):
    # x: [P, G, W] in HBM; out[p, g] = sum over w of x[p, g, w]
    p, g, w = x.shape
    t = nl.ndarray((p, g, w), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x, dge_mode=DGE)
    s = nl.ndarray((p, g), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=s, op=nl.add, data=t, axis=AXIS)
    out = nl.ndarray((p, g), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=s)
    return out
'''


@pytest.mark.parametrize("axis", ["2", "-1", "1", "[1]"])
def test_tensor_reduce_takes_numpy_axes_and_the_0_3_count_from_the_minor_end(axis):
    # axis 2 (or -1) is the last axis in numpy's numbering (nki 0.5+); nki 0.3/0.4 numbered reduction axes from
    # the most minor free axis, so axis 1 on a 3-D tile is that same last axis (never the middle one alone)
    x = RNG.standard_normal((16, 3, 5)).astype(np.float32)
    mod = load_kernel(ROW_STATS.replace("AXIS", axis).replace("DGE", "nisa.dge_mode.none"), display="sums.py")
    np.testing.assert_allclose(simulate(mod.per_group_sums, x).outputs[0], x.sum(axis=2), rtol=1e-5)


def test_a_middle_axis_alone_is_still_an_error_and_dge_mode_may_be_a_raw_integer():
    x = RNG.standard_normal((16, 3, 5)).astype(np.float32)
    mod = load_kernel(ROW_STATS.replace("AXIS", "-2").replace("DGE", "3"), display="sums.py")  # raw dge_mode: accepted
    with pytest.raises(SimulationError) as err:
        simulate(mod.per_group_sums, x)
    assert err.value.code == "err_unsupported_reduce_axis" and err.value.line == 14
