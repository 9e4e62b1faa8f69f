"""An fp8 output with each row's fp32 scale packed into 4 of its bytes (the fp8 quantisation idiom): the bytes are
bit patterns, not values, and REFERENCE's IEEE-style float8_e4m3 decodes some of them to NaN or Inf, in the
reference's output as in the kernel's. Neither the comparison nor the error model may read those codes as NaN/Inf
the kernel computed."""

from __future__ import annotations

import math
import textwrap

import numpy as np

from evidence.nki import load_kernel, simulate
from evidence.numerics.collector import NumericsCollector
from evidence.numerics.compare import compare
from evidence.submission import Manifest, Submission

KERNEL = textwrap.dedent('''
    import numpy as np
    import neuronxcc.nki as nki
    import neuronxcc.nki.isa as nisa
    import neuronxcc.nki.language as nl


    @nki.jit
    def quantize_rows(x):
        rows, hidden = x.shape
        out = nl.ndarray((rows, hidden + 4), dtype=nl.float8_e4m3, buffer=nl.shared_hbm)
        t = nl.load(x)
        amax = nl.ndarray((rows, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(data=t, op0=nl.abs, operand0=0.0, reduce_op=nl.max, reduce_res=amax)
        scale = nl.multiply(amax, 1.0 / 240.0, dtype=nl.float32)  # one ulp off amax / 240 in some rows
        q = nl.multiply(t, nisa.reciprocal(scale), dtype=nl.float8_e4m3)
        nl.store(out[:, 0:hidden], value=q)
        nl.store(out[:, hidden:hidden + 4], value=scale.view(nl.float8_e4m3))
        return out
''')

REFERENCE = textwrap.dedent('''
    import numpy as np
    import ml_dtypes


    def quantize_rows_ref(x):
        x = x.astype(np.float32)
        scale = (np.abs(x).max(axis=1, keepdims=True) / np.float32(240.0)).astype(np.float32)
        q = (x / scale).astype(ml_dtypes.float8_e4m3)
        packed = np.ascontiguousarray(scale).view(np.uint8).view(ml_dtypes.float8_e4m3)
        return np.concatenate([q, packed], axis=1)
''')


def _reference(x: np.ndarray) -> np.ndarray:
    scope: dict = {}
    exec(REFERENCE, scope)
    return scope["quantize_rows_ref"](x)


def test_codes_in_packed_lanes_are_not_nan_or_inf_the_kernel_computed():
    ref = np.full((4, 6), 0.5, np.float32)
    ref[1, 4] = np.nan  # the reference holds a code in column 4: the column is packed
    out = ref.copy()
    out[2, 4] = np.inf  # a code in the packed column
    out[3, 0] = np.nan  # a NaN among the values
    c = compare(out, ref)
    assert (c.nan_count, c.inf_count, c.coded_count) == (1, 0, 1)
    assert c.mismatch_fraction == 2 / 24  # both still differ from the reference


def test_a_kernel_packing_its_scales_has_no_nan_or_inf_of_its_own():
    mod = load_kernel(KERNEL, display="kernel.py")
    x = np.random.default_rng(2).standard_normal((128, 512)).astype(np.float32)
    out = simulate(mod.quantize_rows, x).outputs[0]
    ref = _reference(x)
    assert np.isinf(out.astype(np.float32)[np.isfinite(ref.astype(np.float32))]).any()  # a code one ulp away
    c = compare(out.astype(np.float32), ref.astype(np.float32), dtype_name="float8_e4m3")
    assert c.nan_count == 0 and c.inf_count == 0 and c.coded_count > 0
    assert np.array_equal(out[:, :512].astype(np.float32), ref[:, :512].astype(np.float32))


def test_an_undecided_verdict_carries_no_ratio_for_the_rubric_to_cap_on():
    data = {"task": {"id": "pack", "title": "pack", "target": "trn2"},
            "kernel": {"file": "kernel.py", "entry": "quantize_rows"},
            "reference": {"file": "reference.py", "entry": "quantize_rows_ref"},
            "inputs": [{"name": "x", "shape": [128, 512], "dtype": "float32"}]}
    sub = Submission(manifest=Manifest.model_validate(data), files={"kernel.py": KERNEL, "reference.py": REFERENCE})
    (v,) = NumericsCollector().collect(sub)
    assert v.labels["verdict"] == "cannot_tell" and "not finite" in v.labels["reason"]
    # NaN: no trial defined a ratio; as 1e30 it met "errors 100x or more beyond the bound" (cap 1)
    assert math.isnan(v.metrics["ratio"]) and not v.metrics["ratio"] >= 100
