"""OCP float8_e4m3fn (nki 0.3+) and float8_e8m0fnu outputs: their own unit roundoff, range and tolerance.

The error model and the tolerance table knew only the IEEE-style float8_e4m3 (max 240, with inf) and e5m2: an
e4m3fn output (max 448, no inf: past 464 a cast gives NaN) was compared exactly and assessed as if it were fp32."""

from __future__ import annotations

import textwrap

import ml_dtypes
import numpy as np
import pytest

from evidence.nki.collector import SimulationCollector
from evidence.numerics.collector import NumericsCollector
from evidence.numerics.compare import compare, default_tolerance
from evidence.numerics.errormodel import max_finite, ulp_errors, unit_roundoff
from evidence.submission import Manifest, Submission

HEAD = "import numpy as np\nimport nki\nimport nki.isa as nisa\nimport nki.language as nl\n"

# values 300-440: beyond the IEEE-style e4m3's 240, within e4m3fn's 448
CAST = """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=nl.float8_e4m3fn, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.multiply(t, {scale}, dtype=nl.float8_e4m3fn))
    return out
"""


def submission(scale: float) -> Submission:
    data = {"task": {"id": "cast-e4m3fn", "title": "cast to e4m3fn", "target": "trn3"},
            "kernel": {"file": "kernel.py", "entry": "kernel"}, "reference": {"file": "reference.py", "entry": "ref"},
            "inputs": [{"name": "x", "shape": [128, 64], "dtype": "float32", "distribution": "uniform",
                        "low": 300.0, "high": 440.0}]}
    return Submission(manifest=Manifest.model_validate(data), files={
        "kernel.py": HEAD + textwrap.dedent(CAST.format(scale=scale)),
        "reference.py": "import numpy as np\n\ndef ref(x):\n    return x.astype(np.float64)\n"})


@pytest.mark.parametrize("scale, expected", [(1.0, "within"), (2.0, "defect")])
def test_an_e4m3fn_cast_of_values_up_to_448_is_fine_and_one_past_it_overflows(scale, expected):
    sub = submission(scale)
    out = next(i for i in SimulationCollector().collect(sub) if i.kind == "sim.output")
    v = next(i for i in NumericsCollector().collect(sub) if i.kind == "numerics.verdict")
    assert v.labels["verdict"] == expected, v.title
    if expected == "within":
        assert out.metrics["matches"] == 1.0 and out.metrics["nan_count"] == 0, out.title
        assert out.metrics["rtol"] == 0.125 and v.metrics["ulp_max"] <= 1.0, v.detail
    else:
        assert out.metrics["matches"] == 0.0 and out.metrics["nan_count"] == 128 * 64, out.title
        assert "NaN/Inf elements" in v.title


def test_fp8_formats_have_their_own_roundoff_range_and_tolerance():
    assert unit_roundoff("float8_e4m3fn") == unit_roundoff("float8_e4m3") == 2.0**-4
    assert unit_roundoff("float8_e8m0fnu") == 0.5  # powers of two: no fraction bits
    assert max_finite("float8_e4m3fn") == 448 and max_finite("float8_e4m3") == 240
    assert default_tolerance("float8_e4m3fn") == default_tolerance("float8_e4m3") == (0.125, 0.125)
    # x4-packed words hold four codes: compared bit for bit, never as one number
    assert default_tolerance("float8_e4m3fn_x4") == (0.0, 0.0)
    # one ulp at 400 in e4m3fn is 32; a subnormal's is the smallest spacing, 2^-9
    ref = np.array([400.0, 2.0**-8])
    out = np.array([432.0, 2.0**-8 + 2.0**-9])
    assert ulp_errors(out, ref, "float8_e4m3fn").tolist() == [1.0, 1.0]
    x = np.linspace(300, 440, 64).astype(ml_dtypes.float8_e4m3fn)
    assert compare(x, np.linspace(300, 440, 64), dtype_name="float8_e4m3fn").matches


def test_a_manifest_may_declare_e4m3fn_inputs_and_they_run_through_the_simulation():
    """nki 0.3+ kernels take OCP fp8 weights: a manifest declaring a float8_e4m3fn input was refused ('unknown
    dtype'), so such a kernel could not be graded at all. Its inputs are drawn in range (no NaN) and the kernel's
    upcast matches its reference."""
    data = {"task": {"id": "upcast-e4m3fn", "title": "upcast e4m3fn", "target": "trn2"},
            "kernel": {"file": "kernel.py", "entry": "kernel"}, "reference": {"file": "reference.py", "entry": "ref"},
            "inputs": [{"name": "x", "shape": [128, 64], "dtype": "float8_e4m3fn", "distribution": "large"}]}
    upcast = """
@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0, dtype=nl.float32))
    return out
"""
    sub = Submission(manifest=Manifest.model_validate(data), files={
        "kernel.py": HEAD + textwrap.dedent(upcast),
        "reference.py": "import numpy as np\n\ndef ref(x):\n    return (x.astype(np.float64) * 2).astype(np.float32)\n"})
    from evidence.numerics.inputs import generate_inputs

    (x,) = generate_inputs(sub.manifest.inputs)
    assert x.dtype == np.dtype(ml_dtypes.float8_e4m3fn) and np.isfinite(x.astype(np.float32)).all()
    out = next(i for i in SimulationCollector().collect(sub) if i.kind == "sim.output")
    assert out.metrics["matches"] == 1.0 and out.metrics["nan_count"] == 0, out.title


def test_a_reference_rounding_to_any_narrow_float_is_its_own_rounding():
    from evidence.numerics.collector import _self_rounded

    for name in ("float8_e4m3fn", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "bfloat16", "float16"):
        assert _self_rounded(name) == name
    assert _self_rounded("float32") is None and _self_rounded("float64") is None and _self_rounded("int8") is None
