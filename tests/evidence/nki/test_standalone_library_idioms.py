"""Idioms of today's standalone-dialect library kernels (nki 0.5-0.7) that the simulator must run:
`nki.tensor` trace-time constants, the `nki.isa.constants` enum module, ... Each kernel here is
written for the test and compared with numpy."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import UnsupportedOpError, load_kernel, simulate

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
