"""The error model allows for the roundings a low-precision kernel makes before its output's own: a bf16
RMSNorm + projection stores the normalised activation in bf16 for TensorE (x * rstd rounded, then * gamma rounded),
two roundings the device-faithful reference (inputs and output rounded, fp32 in between) does not make. Without
them in the bound such a kernel read "cannot tell" at 1.1x (nki-library's qkv_tkg); a real defect still exceeds it.
Kernel and numbers written here."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from evidence.nki import load_kernel, simulate
from evidence.numerics.errormodel import MAX_INTERMEDIATE_ROUNDINGS, Trial, assess

BF16 = ml_dtypes.bfloat16

NORM_MATMUL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def norm_matmul(x, gamma, w, normalise=True, bf16_sum=False):
    T, H = x.shape
    _, N = w.shape
    out = nl.ndarray((T, N), dtype=x.dtype, buffer=nl.shared_hbm)
    xt = nl.load(x)
    if normalise:
        ss = nl.sum(nl.square(xt, dtype=nl.float32), axis=1, keepdims=True)
        rstd = nl.rsqrt(nl.add(nl.multiply(ss, 1.0 / H), 1e-6))
        g = nl.load(gamma).broadcast_to((T, H))
        xn = nl.multiply(xt, rstd, dtype=x.dtype)
        xt = nl.multiply(xn, g, dtype=x.dtype)
    acc = nl.zeros((T, N), dtype=nl.float32, buffer=nl.psum)
    part = nl.zeros((T, N), dtype=x.dtype)
    for k in nl.affine_range(H // 128):
        wk = nl.load(w[k * 128:(k + 1) * 128, :])
        if bf16_sum:  # each K tile's product added into a bf16 running sum: a rounding per step
            part[...] = nl.add(part, nl.matmul(xt[:, k * 128:(k + 1) * 128], wk), dtype=x.dtype)
        else:
            acc += nl.matmul(xt[:, k * 128:(k + 1) * 128], wk)
    res = nl.copy(part if bf16_sum else acc, dtype=x.dtype)
    nl.store(out, value=res)
    return out
'''


def _inputs(seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, 1024)).astype(BF16)
    gamma = (1.0 + 0.1 * rng.standard_normal((1, 1024))).astype(BF16)
    w = (0.03 * rng.standard_normal((1024, 256))).astype(BF16)
    return x, gamma, w


def _refs(x, gamma, w, normalise=True):
    """float64, device-faithful (fp32 on the bf16 inputs, output rounded to bf16) and |inputs| references."""
    def ref(x, g, w, dt):
        x, g, w = (np.asarray(a, dt) for a in (x, g, w))
        if normalise:
            x = x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * g
        return x @ w

    r64 = ref(x, gamma, w, np.float64)
    dev = ref(x, gamma, w, np.float32).astype(BF16).astype(np.float64)
    absref = ref(np.abs(np.asarray(x, np.float64)), np.abs(np.asarray(gamma, np.float64)), np.abs(np.asarray(w, np.float64)),
                 np.float64)
    return r64, dev, absref


def test_the_simulator_counts_the_low_precision_roundings_before_the_output_s_own():
    x, gamma, w = _inputs(1)
    mod = load_kernel(NORM_MATMUL, display="norm_matmul.py")
    assert simulate(mod.norm_matmul, x, gamma, w).report.rounding_depth == 2  # x * rstd, then * gamma, in bf16
    # a bf16 projection of the inputs: the PSUM result cast to bf16 is the output's own rounding
    assert simulate(mod.norm_matmul, x, gamma, w, normalise=False).report.rounding_depth == 0
    # eight K tiles summed in bf16: a running sum kept in low precision is not a stage the bound allows for
    assert simulate(mod.norm_matmul, x, gamma, w, normalise=False, bf16_sum=True).report.rounding_depth == 0


def test_a_bf16_norm_before_a_projection_is_within_its_bound_once_its_roundings_count():
    mod = load_kernel(NORM_MATMUL, display="norm_matmul.py")
    for seed in (1, 2, 3):
        x, gamma, w = _inputs(seed)
        sim = simulate(mod.norm_matmul, x, gamma, w)
        out = sim.outputs[0].astype(np.float64)
        r64, dev, absref = _refs(x, gamma, w)
        trial = Trial(f"seed {seed}", out, r64, dev, absref)
        before = assess(trial, "bfloat16", 1024)
        after = assess(trial, "bfloat16", 1024, roundings=sim.report.rounding_depth, device_dtype="bfloat16")
        assert before.verdict == "cannot_tell" and 1.0 < before.ratio < 2.0, (before.ratio, before.rel_l2, before.e_dev)
        assert after.verdict == "within" and after.ratio < 0.8, (after.ratio, after.rel_l2, after.bound)


def test_the_allowance_is_capped_and_a_wrong_output_still_exceeds_it():
    mod = load_kernel(NORM_MATMUL, display="norm_matmul.py")
    x, gamma, w = _inputs(4)
    r64, dev, absref = _refs(x, gamma, w)
    out = simulate(mod.norm_matmul, x, gamma, w).outputs[0].astype(np.float64)
    # gamma applied twice (a defect of 10% per element): far beyond any allowance
    wrong = out * np.asarray(gamma, np.float64)[:, :256]
    res = assess(Trial("defect", wrong, r64, dev, absref), "bfloat16", 1024, roundings=2, device_dtype="bfloat16")
    assert res.verdict == "defect", (res.ratio, res.reason)
    capped = assess(Trial("t", out, r64, dev, absref), "bfloat16", 1024, roundings=50, device_dtype="bfloat16")
    at_cap = assess(Trial("t", out, r64, dev, absref), "bfloat16", 1024, roundings=MAX_INTERMEDIATE_ROUNDINGS,
                    device_dtype="bfloat16")
    assert capped.bound == at_cap.bound and capped.roundings == MAX_INTERMEDIATE_ROUNDINGS
