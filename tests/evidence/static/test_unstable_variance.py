"""unstable-variance beyond its examples: the fp32 form is low severity, the audit's s5 layout is caught."""

from __future__ import annotations

from evidence.static.engine import analyze, bindings_from
from evidence.static.rules.unstable_variance import UnstableVariance

HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"


def _findings(code: str, dtype: str):
    a = analyze(HEAD + code, file="k.py", inputs=bindings_from({"x": ((128, 512), dtype)}), rules=[UnstableVariance])
    assert not a.failures
    return a.findings


def test_fp32_one_pass_variance_is_reported_at_low_severity() -> None:
    code = ("@nki.jit\ndef k(x):\n    t = nl.load(x)\n    m = nl.mean(t, axis=[1], keepdims=True)\n"
            "    e2 = nl.mean(nl.square(t), axis=[1], keepdims=True)\n    v = e2 - m * m\n")
    [f] = _findings(code, "float32")
    assert f.severity.value == "low" and f.start == 8 and f.labels == {"source": "t", "dtype": "float32"}
    [g] = _findings(code, "bfloat16")
    assert g.severity.value == "medium" and "bfloat16" in g.message


def test_sum_of_squares_minus_scaled_squared_sum_in_a_row_loop() -> None:
    code = ("@nki.jit\ndef k(x):\n    for i in nl.affine_range(4):\n        t = nl.load(x)\n"
            "        s = nl.sum(t, axis=[1], keepdims=True)\n        ss = nl.sum(t * t, axis=[1], keepdims=True)\n"
            "        mean = s / 512\n        var = ss / 512 - mean * mean\n        y = nl.rsqrt(var + 1e-5)\n")
    [f] = _findings(code, "bfloat16")
    assert f.start == 10


def test_bn_stats_and_two_pass_forms_are_not_reported() -> None:
    bn = ("import neuronxcc.nki.isa as nisa\n@nki.jit\ndef k(x):\n    t = nl.load(x)\n"
          "    st = nisa.bn_stats(t, dtype=nl.float32)\n    mv = nisa.bn_aggr(st)\n")
    assert _findings(bn, "bfloat16") == []
    two_pass = ("@nki.jit\ndef k(x):\n    t = nl.load(x)\n    m = nl.mean(t, axis=[1], keepdims=True)\n"
                "    v = nl.mean((t - m) ** 2, axis=[1], keepdims=True)\n")
    assert _findings(two_pass, "bfloat16") == []

