"""Kernel parameters that are Python values: defaults and manifest `value`s, tuples included (issue 10.2)."""

from __future__ import annotations

import numpy as np

from evidence.nki.collector import SimulationCollector
from evidence.static.engine import analyze, bindings_from
from evidence.static.facts import fact_items
from evidence.submission import Manifest, Submission

FLAGS = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, scale, use_mask=False, mixed_precision=True, acc_dtype=nl.float32):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        if mixed_precision:
            t = nl.copy(t, dtype=nl.bfloat16)
        acc = nl.ndarray((128, x.shape[1]), dtype=acc_dtype, buffer=nl.sbuf)
        if use_mask and scale > 1:
            t = nl.multiply(t, scale)
        acc[...] = nl.multiply(t, scale)
        nl.store(out[i * 128:(i + 1) * 128, :], value=acc)
    return out
"""


def _analysis(inputs):
    return analyze(FLAGS, inputs=bindings_from(inputs), entry="kernel")


def test_flags_with_python_defaults_are_trace_time_control_flow():
    a = _analysis({"x": ((256, 512), "float32"), "scale": 2.0})
    assert [f.rule for f in a.findings if f.rule == "python-logic-on-tile"] == []
    allocs = [i for i in fact_items(a, "nki-static@1") if i.kind == "nki.alloc" and i.labels["buffer"] == "sbuf"]
    assert [i.labels["dtype"] for i in allocs] == ["float32"]  # the default dtype parameter, resolved


def test_manifest_values_override_defaults():
    a = _analysis({"x": ((256, 512), "float32"), "scale": 2.0, "use_mask": True})
    assert [f.rule for f in a.findings if f.rule == "python-logic-on-tile"] == []


def test_a_tile_in_a_condition_is_still_flagged():
    src = FLAGS.replace("if mixed_precision:", "if t:")
    a = analyze(src, inputs=bindings_from({"x": ((256, 512), "float32"), "scale": 2.0}), entry="kernel")
    assert [f.start for f in a.findings if f.rule == "python-logic-on-tile"] == [10]


TUPLE_KERNEL = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, tile):
    rows, cols = tile
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // rows):
        for j in nl.affine_range(x.shape[1] // cols):
            t = nl.load(x[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols])
            nl.store(out[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols], value=nl.exp(t))
    return out
"""


def test_a_tuple_value_reaches_the_kernel_and_the_reference():
    manifest = Manifest.model_validate({
        "task": {"id": "t", "title": "t"}, "kernel": {"file": "kernel.py", "entry": "kernel"},
        "inputs": [{"name": "x", "shape": [256, 256]}, {"name": "tile", "value": [128, 64]}],
        "reference": {"file": "ref.py", "entry": "ref"},
    })
    assert manifest.inputs[1].value == (128, 64)
    ref = "import numpy as np\n\ndef ref(x, tile):\n    assert tuple(tile) == (128, 64)\n    return np.exp(x)\n"
    items = SimulationCollector().collect(Submission(manifest=manifest, files={"kernel.py": TUPLE_KERNEL, "ref.py": ref}))
    (out,) = [i for i in items if i.kind == "sim.output"]
    assert out.metrics["matches"] == 1.0
    (trace,) = [i for i in items if i.kind == "sim.trace"]
    assert trace.metrics["dma_count"] == 16  # 2 x 4 tiles of [128, 64], loaded and stored
    assert np.isclose(trace.metrics["partition_utilisation"], 1.0)
