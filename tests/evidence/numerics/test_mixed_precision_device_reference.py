"""The device-faithful reference rounds each input to the precision the kernel computes it in, not every input to
the kernel's lowest dtype: a matmul of fp8 weights and bf16 activations had its activations rounded to fp8 too, a
bound some 15x too loose, and a precision defect after the matmul (partial sums cast to fp8) read "within expected
variation". Kernels and references written here; the references run in-process through the runner's own variants."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import dtypes, load_kernel, simulate
from evidence.nki.runner import _reference_variants
from evidence.numerics.collector import _reduction_length, device_dtypes
from evidence.numerics.errormodel import Trial, assess, lowest_precision
from evidence.numerics.inputs import generate_inputs
from evidence.sandbox.config import Limits
from evidence.sandbox.protocol import ChildJob
from evidence.submission import InputSpec

# w: [K, M] weights, x: [K, N] activations; out = w.T @ x over K tiles of 128
KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(w, x, mode="psum", cast=False):
    K, M = w.shape
    _, N = x.shape
    out = nl.ndarray((M, N), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    acc = nl.zeros((M, N), nl.float32, buffer=nl.psum)
    run = nl.zeros((M, N), nl.float32, buffer=nl.sbuf)
    for k in nl.sequential_range(K // 128):
        wt = nl.load(w[k * 128:(k + 1) * 128, :])
        xt = nl.load(x[k * 128:(k + 1) * 128, :])
        if cast:  # fp32 inputs handed to TensorE in bf16
            wt = nl.copy(wt, dtype=nl.bfloat16)
            xt = nl.copy(xt, dtype=nl.bfloat16)
        if mode == "psum":
            acc += nl.matmul(wt, xt, transpose_x=True)
        else:  # the planted defect: each K tile's partial product rounded to fp8 before it is summed
            part = nl.copy(nl.matmul(wt, xt, transpose_x=True), dtype=nl.float8_e4m3)
            run[...] = nl.add(run, part, dtype=nl.float32)
    nl.store(out, value=nl.copy(acc if mode == "psum" else run, dtype=nl.bfloat16))
    return out
'''


def ref(w, x):
    return w.T @ x


def _specs(w: str, x: str) -> tuple[InputSpec, ...]:
    return (InputSpec(name="w", shape=(512, 64), dtype=w), InputSpec(name="x", shape=(512, 128), dtype=x))


def _run(specs, **kw):
    """(the kernel's report, its trial verdict) on seed 1, references as the collector builds them."""
    inputs = generate_inputs(specs, 1)
    sim = simulate(load_kernel(KERNEL, display="mixed.py").kernel, *inputs, **kw)
    job = ChildJob(role="reference", file="reference.py", entry="ref", inputs=specs, timeout_s=60, limits=Limits(),
                   reference_variants=("f64", "dev", "abs"), device_dtypes=device_dtypes(specs, sim.report))
    arrays: dict = {}
    status = _reference_variants(ref, inputs, job, arrays, [])
    assert set(status.values()) == {"ok"}, status
    out = np.asarray(sim.outputs[0]).astype(np.float64)
    dev = dtypes.to_f32(dtypes.cast(arrays["devref0"].astype(np.float32), dtypes.bfloat16)).astype(np.float64)
    k = _reduction_length(sim.report, [out.shape])
    res = assess(Trial("seed 1", out, arrays["f64ref0"], dev, arrays["absref0"]), "bfloat16", k, (),
                 sim.report.rounding_depth, lowest_precision(sim.report.dtypes))
    return sim.report, res


def test_each_input_keeps_the_precision_the_kernel_computes_it_in():
    report, _ = _run(_specs("float8_e4m3", "bfloat16"))
    assert report.input_dtypes == {0: ("float8_e4m3",), 1: ("bfloat16",)}
    # the fp8 partial sums come after the matmul: they round the product, not the activations
    report, _ = _run(_specs("float8_e4m3", "bfloat16"), mode="fp8_partials")
    assert report.input_dtypes == {0: ("float8_e4m3",), 1: ("bfloat16",)}
    assert device_dtypes(_specs("float8_e4m3", "bfloat16"), report) == ("float8_e4m3", "bfloat16")
    # fp32 inputs cast to bf16 for TensorE are computed in bf16
    report, _ = _run(_specs("float32", "float32"), cast=True)
    assert device_dtypes(_specs("float32", "float32"), report) == ("bfloat16", "bfloat16")


def test_a_correct_fp8_by_bf16_matmul_is_within_a_bound_at_the_activations_precision():
    _, res = _run(_specs("float8_e4m3", "bfloat16"))
    assert res.verdict == "within", res.reason
    # bf16 output rounding (u = 2^-8), not fp8 activations (u = 2^-4): rounding them to fp8 gave a bound of ~0.04
    assert res.e_dev < 0.003 and res.bound < 0.005


def test_partial_sums_cast_to_fp8_in_an_fp8_by_bf16_matmul_are_a_defect():
    _, res = _run(_specs("float8_e4m3", "bfloat16"), mode="fp8_partials")
    assert res.verdict == "defect" and res.ratio > 4, (res.reason, res.bound)


@pytest.mark.parametrize("w, x", [("float32", "float32"), ("float32", "bfloat16")])
def test_fp32_inputs_cast_to_bf16_for_tensore_stay_within(w, x):
    _, res = _run(_specs(w, x), cast=True)
    assert res.verdict == "within", (res.reason, res.e_dev, res.bound)
