"""Semantics the fourth public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import SimulationError, load_kernel, simulate

RNG = np.random.default_rng(41)

# Each step's PSUM product is kept in a Python list (as kernels keep per-unit tiles for later steps), but only
# READ_AT_END reads them again: without it every tile is dead after its copy to SBUF.
PSUM_TEMPORARIES = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scaled_products(x, w):
    p, f = x.shape
    x_sb = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    w_sb = nl.ndarray((p, p), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=w_sb, src=w)
    kept = []
    res = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=res, value=0.0)
    for step in range(12):
        prod = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=prod, stationary=w_sb, moving=x_sb)
        nisa.scalar_tensor_tensor(dst=res, data=prod, op0=nl.multiply, operand0=float(step), op1=nl.add,
                                  operand1=res)
        kept.append(prod)
    if READ_AT_END:
        for prod in kept:
            nisa.tensor_tensor(dst=res, data1=res, data2=prod, op=nl.add)
    out = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def test_psum_peak_counts_tiles_from_first_to_last_access_not_while_python_holds_them():
    x = RNG.standard_normal((128, 256)).astype(np.float32)
    w = RNG.standard_normal((128, 128)).astype(np.float32)
    product = w.T.astype(np.float64) @ x
    for read_at_end, banks, weight in ((False, 2, 66), (True, 12, 78)):  # sum(range(12)), + 12 more reads
        mod = load_kernel(PSUM_TEMPORARIES.replace("READ_AT_END", str(read_at_end)), display="psum.py")
        sim = simulate(mod.scaled_products, x, w)
        np.testing.assert_allclose(sim.outputs[0], weight * product, rtol=1e-4, atol=1e-3)
        assert sim.report.psum_peak_banks == banks
        capacity = [f for f in sim.report.findings if f.code == "psum_capacity_exceeded"]
        assert bool(capacity) == read_at_end



def test_psum_ranges_of_freed_and_live_tiles_count_alike():
    # a freed tile's range is kept compactly (a long run frees millions); the peak must not change with it
    from evidence.nki.ops import OPS
    from evidence.nki.state import State

    st = State("trn2", False, {}, OPS)
    st.psum_range(1, 2)[:2] = [0, 5]
    st.psum_range(2, 1)[:2] = [3, 8]
    st.psum_range(3, 4)  # never accessed by an instruction: holds no bank
    st.psum_range(4, 3)[:2] = [6, 9]
    assert st.psum_peak() == 4  # 3 banks at 3..5, 4 at 6..8
    for uid in (1, 2, 3):
        st.psum_close(uid)
    assert st.psum_peak() == 4
    assert list(st.psum_closed) == [0, 5, 2, 3, 8, 1] and list(st.psum_open) == [4]

# rsqrt(mean(x^2) + eps) with eps a Python float as `bias` (nki 0.7: `bias: float | NkiTensor | None`)
SCALAR_BIAS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def inverse_rms(x):
    p, f = x.shape
    x_sb = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=x_sb, src=x)
    squares = nl.ndarray((p, f), dtype=nl.float32, buffer=nl.sbuf)
    total = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(squares, op=nl.square, data=x_sb, reduce_op=nl.add, reduce_res=total, bias=0.5)
    nisa.activation(total, op=nl.rsqrt, data=total, scale=1.0 / f, bias=EPS)
    out = nl.ndarray((p, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=total)
    return out
'''


def test_standalone_activation_takes_a_python_number_as_bias():
    x = RNG.standard_normal((96, 40)).astype(np.float32)
    sim = simulate(load_kernel(SCALAR_BIAS.replace("EPS", "1e-3"), display="rms.py").inverse_rms, x)
    expected = 1 / np.sqrt(((x.astype(np.float64) + 0.5) ** 2).mean(axis=1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(sim.outputs[0], expected, rtol=1e-5)


def test_beta_activation_bias_is_still_a_vector():
    beta = '''
import numpy as np
import pytest
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def shifted_exp(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.activation(op=nl.exp, data=nl.load(x), bias=0.5))
    return out
'''
    with pytest.raises(SimulationError) as err:
        simulate(load_kernel(beta, display="exp.py").shifted_exp, np.zeros((8, 4), np.float32))
    line = next(i for i, text in enumerate(beta.splitlines(), 1) if "bias=0.5" in text)
    assert err.value.code == "err_invalid_operand" and (err.value.file, err.value.line) == ("exp.py", line)
