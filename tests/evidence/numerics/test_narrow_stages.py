"""Intermediates stored narrower than the output count in the bound: a kernel that computes in bf16 and writes an
fp32 output (a bf16 activation, then a matmul, fp32 result) has its bf16 roundings as its whole error, while the
device-faithful reference rounds only inputs and output, so its fp32 bound (~1e-6) read the honest bf16 error as
"defect x20-x30". Each narrow stage now adds u_stage / sqrt(3) times the reference's measured response to relative
perturbations; a real defect (one column block scaled by 1.03) still exceeds twice the bound. Kernels written here;
the references run in-process through the runner's own variants."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import dtypes, load_kernel, simulate
from evidence.nki.runner import _reference_variants
from evidence.numerics.collector import _reduction_length, device_dtypes, device_regions
from evidence.numerics.errormodel import Trial, assess, lowest_precision
from evidence.numerics.inputs import generate_inputs
from evidence.sandbox.config import Limits
from evidence.sandbox.protocol import ChildJob
from evidence.submission import InputSpec

# out = (tanh(x) * g) @ w, fp32 output; the activation is stored in bf16 on the way
KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, g, w, mode="bf16_act", defect=False):
    T, H = x.shape
    _, N = w.shape
    out = nl.ndarray((T, N), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    gt = nl.load(g)
    if mode == "bf16_act":  # tanh stored in bf16, gated on VectorE into fp32, an fp32 matmul
        h = nl.multiply(nl.tanh(xt, dtype=nl.bfloat16), gt, dtype=nl.float32)
    elif mode == "bf16_operand":  # the gated activation stored in bf16 for a bf16 matmul
        h = nl.multiply(nl.tanh(xt), gt, dtype=nl.bfloat16)
    elif mode == "no_matmul":  # the bf16 activation gated straight into the fp32 output: no TensorE operand
        h = nl.multiply(nl.tanh(xt, dtype=nl.bfloat16), gt, dtype=nl.float32)
        nl.store(out, value=h[:, 0:N])
        return out
    else:  # fp32 throughout
        h = nl.multiply(nl.tanh(xt), gt, dtype=nl.float32)
    acc = nl.zeros((T, N), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(H // 128):
        wk = nl.load(w[k * 128:(k + 1) * 128, :])
        if mode == "bf16_operand":
            wk = nl.copy(wk, dtype=nl.bfloat16)
        acc += nl.matmul(h[:, k * 128:(k + 1) * 128], wk)
    res = nl.copy(acc, dtype=nl.float32)
    if defect:  # the planted defect: the first of four column blocks scaled by 1.03
        res[:, 0:64] = nl.multiply(res[:, 0:64], 1.03)
    nl.store(out, value=res)
    return out
'''


def ref(x, g, w):
    return (np.tanh(x) * g) @ w


def ref_no_matmul(x, g, w):
    return (np.tanh(x) * g)[:, :w.shape[1]]


def _run(dtype: str, mode: str, defect: bool = False, seed: int = 1, counted: bool = True):
    """(the kernel's report, its trial result) with the references the collector builds; `counted=False`: the bound
    without the kernel's intermediate roundings."""
    specs = tuple(InputSpec(name=n, shape=s, dtype=dtype) for n, s in
                  (("x", (128, 512)), ("g", (128, 512)), ("w", (512, 256))))
    inputs = generate_inputs(specs, seed)
    sim = simulate(load_kernel(KERNEL, display="narrow.py").kernel, *inputs, mode=mode, defect=defect)
    job = ChildJob(role="reference", file="reference.py", entry="ref", inputs=specs, timeout_s=60, limits=Limits(),
                   reference_variants=("f64", "dev", "abs", "pert"), device_dtypes=device_dtypes(specs, sim.report),
                   device_regions=device_regions(specs, sim.report))
    arrays: dict = {}
    status = _reference_variants(ref_no_matmul if mode == "no_matmul" else ref, inputs, job, arrays, [])
    assert set(status.values()) == {"ok"}, status
    out = np.asarray(sim.outputs[0]).astype(np.float64)
    dev = dtypes.to_f32(dtypes.cast(arrays["devref0"].astype(np.float32), dtypes.float32)).astype(np.float64)
    trial = Trial(f"seed {seed}", out, arrays["f64ref0"], dev, arrays["absref0"], response=arrays["pertref0"])
    res = assess(trial, "float32", _reduction_length(sim.report, [out.shape]), (),
                 sim.report.rounding_depth if counted else 0, lowest_precision(sim.report.dtypes),
                 lowest_precision(sim.report.rounding_dtypes))
    return sim.report, res


def test_the_simulator_counts_narrow_stages_of_a_wider_output():
    report, _ = _run("float32", "bf16_act")
    # tanh stored in bf16, then an fp32 gate and an fp32 matmul: no bf16 TensorE operand, yet one bf16 rounding
    assert report.rounding_depth == 1 and report.rounding_dtypes == ("bfloat16",)
    report, _ = _run("float32", "fp32")
    assert report.rounding_depth == 0 and report.rounding_dtypes == ()


def test_a_bf16_stage_with_no_matmul_after_it_counts_for_an_fp32_output():
    # before, only roundings a matmul read counted: this output's one bf16 rounding read "defect x3,960"
    report, res = _run("float32", "no_matmul")
    assert report.rounding_depth == 1
    assert res.verdict == "within" and res.bound < 0.003, (res.ratio, res.bound)


@pytest.mark.parametrize("dtype, mode", [("float32", "bf16_act"), ("bfloat16", "bf16_operand")])
def test_a_bf16_stage_before_an_fp32_output_is_within_and_a_planted_defect_is_not(dtype, mode):
    for seed in (1, 2):
        _, before = _run(dtype, mode, seed=seed, counted=False)
        assert before.verdict == "defect" and before.ratio > 10, (before.ratio, before.bound)
        _, res = _run(dtype, mode, seed=seed)
        assert res.verdict == "within" and res.ratio < 0.8, (res.ratio, res.rel_l2, res.bound)
        # one bf16 rounding (u / sqrt(3) = 2.3e-3) amplified ~1.5x: the bound stays informative
        assert res.bound < 0.006
    _, wrong = _run(dtype, mode, defect=True)
    assert wrong.verdict == "defect" and wrong.ratio > 2.5, (wrong.ratio, wrong.bound)


def test_an_fp32_kernel_keeps_its_fp32_bound():
    _, res = _run("float32", "fp32")
    assert res.roundings == 0 and res.verdict == "within" and res.bound < 1e-4, (res.bound, res.reason)


# y = bf16(x @ w1) @ w2: the fp32 hidden result cast to bf16 for the second matmul (a state handed to TensorE in bf16)
CHAIN = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def chain(x, w1, w2, defect=False):
    T, H = x.shape
    _, M = w1.shape
    _, N = w2.shape
    out = nl.ndarray((T, N), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    acc = nl.zeros((T, M), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(H // 128):
        acc += nl.matmul(xt[:, k * 128:(k + 1) * 128], nl.load(w1[k * 128:(k + 1) * 128, :]))
    h = nl.copy(acc, dtype=nl.bfloat16)
    y = nl.copy(nl.matmul(h, nl.load(w2)), dtype=nl.float32)
    if defect:  # the first of four column blocks scaled by 1.03
        y[:, 0:64] = nl.multiply(y[:, 0:64], 1.03)
    nl.store(out, value=y)
    return out
'''


def _chain(defect: bool = False):
    specs = tuple(InputSpec(name=n, shape=s, dtype="bfloat16") for n, s in
                  (("x", (128, 256)), ("w1", (256, 128)), ("w2", (128, 256))))
    inputs = generate_inputs(specs, 1)
    sim = simulate(load_kernel(CHAIN, display="chain.py").chain, *inputs, defect=defect)
    job = ChildJob(role="reference", file="reference.py", entry="ref", inputs=specs, timeout_s=60, limits=Limits(),
                   reference_variants=("f64", "dev", "abs", "pert"), device_dtypes=device_dtypes(specs, sim.report))
    arrays: dict = {}
    status = _reference_variants(lambda x, w1, w2: (x @ w1) @ w2, inputs, job, arrays, [])
    assert set(status.values()) == {"ok"}, status
    out = np.asarray(sim.outputs[0]).astype(np.float64)
    trial = Trial("seed 1", out, arrays["f64ref0"], arrays["devref0"], arrays["absref0"], response=arrays["pertref0"])
    return sim.report, assess(trial, "float32", _reduction_length(sim.report, [out.shape]), (),
                              sim.report.rounding_depth, lowest_precision(sim.report.dtypes),
                              lowest_precision(sim.report.rounding_dtypes))


def test_a_computed_fp32_value_cast_to_bf16_for_tensore_is_a_rounding():
    # bf16 inputs, so the device reference has nothing to round: before, the cast passed the count on (depth 0)
    # and the output read "defect x7.8"
    report, res = _chain()
    assert report.rounding_depth == 1 and report.rounding_dtypes == ("bfloat16",)
    assert res.verdict == "within" and res.ratio < 0.8, (res.ratio, res.bound)
    _, wrong = _chain(defect=True)
    assert wrong.verdict == "defect" and wrong.ratio > 2.5, (wrong.ratio, wrong.bound)


def test_a_cast_of_an_input_s_own_data_is_not_counted_again():
    # w cast to bf16 after its load: the device reference rounds w itself (input_precision)
    report, _ = _run("float32", "bf16_operand")
    assert report.rounding_depth == 1  # the gated activation only
