"""The conditioning estimate on references that exponentiate an input: an exp-gated recurrence of our own.

kappa = ||f(|x|)|| / ||f(x)|| read e^(+sum |g|) for h_t = exp(g_t) h_(t-1) + x_t (g < 0), so the bound admitted an
output off by half; the perturbation cap (evidence.numerics.conditioning) keeps the bound at what rounding moves."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from evidence.numerics import conditioning
from evidence.numerics.collector import NumericsCollector
from evidence.numerics.errormodel import Trial, assess
from evidence.submission import Manifest, Submission

HEAD = ("import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\n"
        "import neuronxcc.nki.language as nl\n")

# a gated linear recurrence over T steps per channel (partition), then a projection over the 128 channels
GATED = """
@nki.jit
def kernel(x, g, w):
    C, T = x.shape
    _, N = w.shape
    out = nl.ndarray((T, N), dtype=nl.float32, buffer=nl.shared_hbm)
    gate = nl.load(g)
    decay = nl.exp({gate})
    h = nisa.tensor_tensor_scan(decay, nl.load(x), initial=0.0, op0=np.multiply, op1=np.add, dtype=nl.float32)
    o = nl.matmul(h, nl.load(w), transpose_x=True)
    nl.store(out, value={out})
    return out
"""

REF = """
def ref(x, g, w):
    h = np.zeros(x.shape, dtype=np.float64)
    run = np.zeros(x.shape[0], dtype=np.float64)
    for t in range(x.shape[1]):
        run = np.exp(g[:, t]) * run + x[:, t]
        h[:, t] = run
    return h.T @ w
"""

VARIANTS = {
    "correct": ("gate", "o"),
    "half": ("gate", "nl.multiply(o, 0.5)"),  # the output scaled by one half
    "gate_twice": ("nl.multiply(gate, 2.0)", "o"),  # the decay applied twice per step
}


def submission(variant: str) -> Submission:
    gate, out = VARIANTS[variant]
    data = {"task": {"id": f"gated-{variant}", "title": "gated recurrence", "target": "trn2"},
            "kernel": {"file": "kernel.py", "entry": "kernel"}, "reference": {"file": "reference.py", "entry": "ref"},
            "inputs": [{"name": "x", "shape": [128, 64], "dtype": "float32"},
                       {"name": "g", "shape": [128, 64], "dtype": "float32", "distribution": "uniform",
                        "low": -1.0, "high": -0.05},
                       {"name": "w", "shape": [128, 256], "dtype": "float32"}]}
    kernel = HEAD + textwrap.dedent(GATED.format(gate=gate, out=out))
    return Submission(manifest=Manifest.model_validate(data),
                      files={"kernel.py": kernel, "reference.py": "import numpy as np\n" + REF})


def verdict(variant: str):
    items = NumericsCollector().collect(submission(variant))
    assert len(items) == 1 and items[0].kind == "numerics.verdict", items
    return items[0]


@pytest.mark.parametrize("variant, expected", [("correct", "within"), ("half", "defect"), ("gate_twice", "defect")])
def test_an_exp_gated_recurrence_is_bounded_by_what_rounding_moves_not_by_exp_of_abs_gate(variant, expected):
    v = verdict(variant)
    assert v.labels["verdict"] == expected, v.title
    # f(|x|) grows like e^(64 * 0.5): the |inputs| estimate saturates, the measured one stays small
    assert v.metrics["kappa"] < 1e3, v.detail
    assert "measured by perturbing the inputs" in v.detail
    if expected == "within":
        assert v.metrics["ratio"] < 0.5
    else:
        assert v.metrics["ratio"] > 100


def _responses(fn, inputs):
    base = fn(*inputs)
    return np.array([conditioning.response(base, fn(*conditioning.perturbed(inputs, j, lambda a: True)))
                     for j in range(conditioning.PATTERNS)])


@pytest.mark.parametrize("distribution", ["normal", "cancellation"])
def test_the_cap_leaves_the_abs_estimate_of_sums_of_products_alone(distribution):
    # matmuls, cancelling or not: the cap is above ||f(|x|)|| / ||f(x)||, so their bounds do not change
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((256, 64)), rng.standard_normal((256, 96))
    if distribution == "cancellation":
        signs = np.where(np.arange(256) % 2 == 0, 1.0, -1.0)[:, None]
        a, b = signs * (1 + 1e-3 * a), 1 + 1e-3 * b

    def f(x, y):
        return x.T @ y

    ref = f(a, b)
    trial = Trial("t", ref, ref, ref, f(np.abs(a), np.abs(b)), response=_responses(f, [a, b]))
    res = assess(trial, "float32", 256)
    assert res.kappa == res.kappa_abs and res.kappa_abs > (1e2 if distribution == "cancellation" else 5)


def test_a_slow_reference_gets_fewer_perturbation_calls():
    from evidence.nki.runner import _perturbation_responses

    calls = []

    def f(x):
        calls.append(1)
        return 2 * x

    x = np.linspace(1, 2, 8)
    arrays, outputs = {"f64ref0": f(x)}, []
    assert _perturbation_responses(f, lambda: [x], arrays, outputs, most=1) == "ok"
    assert arrays["pertref0"].shape == (1,) and len(calls) == 2
    assert _perturbation_responses(f, lambda: [x], {"f64ref0": x}, [], most=0).startswith("skipped")
    assert np.isclose(arrays["pertref0"][0], 1.0)  # a linear map moves as its inputs do
