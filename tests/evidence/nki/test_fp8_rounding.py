"""Dequantised fp8 values written as fp8 again (`fp8_rerounded`): reported at the instruction that rounds them,
and never for quantising, for fp8 x fp8 products, for power-of-two scales or for a wider result."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from evidence.nki import load_kernel, simulate

RNG = np.random.default_rng(8)

# fp8 weights with one fp32 scale per row, dequantised on VectorE and multiplied by bf16 activations.
BETA = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def dequant_matmul(w, s, x, into_fp8=True):
    out = nl.ndarray((128, 256), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    wt = nl.load(w)
    sc = nl.load(s)
    if into_fp8:
        wd = nisa.tensor_scalar(wt, nl.multiply, sc)
    else:
        wd = nisa.tensor_scalar(wt, nl.multiply, sc, dtype=nl.bfloat16)
    xt = nl.load(x)
    acc = nl.zeros((128, 256), dtype=nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(xt, wd)
    nl.store(out, value=nl.copy(acc, dtype=nl.bfloat16))
    return out
'''

# The standalone dialect: the destination decides the written dtype.
STANDALONE = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def dequant(w, s, scale_kind="tile", dst_dtype=nl.float8_e4m3):
    wt = nl.ndarray(w.shape, dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=wt, src=w)
    sc = nl.ndarray(s.shape, dtype=s.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=sc, src=s)
    wd = nl.ndarray(w.shape, dtype=dst_dtype, buffer=nl.sbuf)
    if scale_kind == "tile":
        nisa.tensor_scalar(wd, wt, op0=nl.multiply, operand0=sc)
    elif scale_kind == "activation":
        nisa.activation(wd, op=nl.copy, data=wt, scale=sc)
    else:
        nisa.tensor_scalar(wd, wt, op0=nl.multiply, operand0=scale_kind)
    out = nl.ndarray(w.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    back = nl.ndarray(w.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(back, wd)
    nisa.dma_copy(dst=out, src=back)
    return out
'''


def _weights():
    w = (RNG.standard_normal((128, 256)) * 8).astype(ml_dtypes.float8_e4m3)
    s = RNG.uniform(0.005, 0.025, (128, 1)).astype(np.float32)
    return w, s


def _line(src: str, text: str) -> int:
    return next(n for n, line in enumerate(src.splitlines(), 1) if text in line)


def _rerounded(sim):
    return [f for f in sim.report.findings if f.code == "fp8_rerounded"]


def test_dequantised_fp8_weights_rounded_back_to_fp8_are_reported_at_the_scaling_line_and_cost_accuracy():
    w, s = _weights()
    x = RNG.standard_normal((128, 128)).astype(ml_dtypes.bfloat16)
    kernel = load_kernel(BETA).dequant_matmul
    exact = x.astype(np.float64).T @ (w.astype(np.float64) * s)
    errors = {}
    for into_fp8 in (True, False):
        sim = simulate(kernel, w, s, x, into_fp8=into_fp8)
        out = sim.outputs[0].astype(np.float64)
        errors[into_fp8] = np.linalg.norm(out - exact) / np.linalg.norm(exact)
        found = _rerounded(sim)
        if into_fp8:
            assert [f.line for f in found] == [_line(BETA, "wd = nisa.tensor_scalar(wt, nl.multiply, sc)")], found
            assert "float8_e4m3 data scaled by float32" in found[0].message
            assert "bfloat16" in found[0].message  # says what to do instead
        else:
            assert found == []
    assert errors[True] > 5 * errors[False]  # what the finding claims: the second rounding costs accuracy


@pytest.mark.parametrize("scale_kind", ["tile", "activation", 0.37])
def test_a_dst_first_call_is_judged_by_its_destinations_dtype(scale_kind):
    w, s = _weights()
    kernel = load_kernel(STANDALONE).dequant
    call = {"tile": "operand0=sc)", "activation": "nisa.activation("}.get(scale_kind, "operand0=scale_kind)")
    assert [f.line for f in _rerounded(simulate(kernel, w, s, scale_kind=scale_kind))] == [_line(STANDALONE, call)]
    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert _rerounded(simulate(kernel, w, s, scale_kind=scale_kind, dst_dtype=bf16)) == []


def test_quantising_fp8_products_and_power_of_two_scales_are_not_reported():
    w, s = _weights()
    kernel = load_kernel(STANDALONE).dequant
    assert _rerounded(simulate(kernel, w, s, scale_kind=0.25)) == []  # exact in fp8
    bf16 = RNG.standard_normal((128, 256)).astype(ml_dtypes.bfloat16)
    assert _rerounded(simulate(kernel, bf16, s)) == []  # quantising bf16 into fp8 is what fp8 output is for
    fp8_scale = s.astype(ml_dtypes.float8_e4m3)
    assert _rerounded(simulate(kernel, w, fp8_scale)) == []  # fp8 x fp8: no wider scale to lose
