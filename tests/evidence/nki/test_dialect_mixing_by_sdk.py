"""A standalone kernel that also imports `neuronxcc.nki` (nki-library's router top-k annotates its outputs with
`neuronxcc.nki.typing`) is legal up to nki 0.3 (Neuron SDK 2.29) and a compile error from nki 0.4 (SDK 2.30;
REFERENCE §0). The simulator follows the task's `neuron_sdk`: before 2.30 the kernel runs, with a low finding at
the mixing import; from 2.30, or unstated, it stays `err_mixed_nki_dialects` at file:line. Kernel written here."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import load_kernel, simulate
from evidence.nki.collector import SimulationCollector
from evidence.nki.errors import KernelLoadError
from evidence.submission import Manifest, Submission

MIXED = '''import nki
import nki.isa as nisa
import nki.language as nl
import neuronxcc.nki.typing as nt


@nki.jit
def scale_into(x, out: nt.mutable_tensor, factor=3.0):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(t, t, op0=nl.multiply, operand0=factor)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def _mixing(sim):
    return [f for f in sim.report.findings if f.code == "mixed_nki_dialects"]


def test_a_kernel_mixing_the_dialects_runs_for_an_sdk_before_2_30_with_a_finding_at_the_import():
    x = np.linspace(-1, 1, 128 * 16, dtype=np.float32).reshape(128, 16)
    mod = load_kernel(MIXED, display="mixed.py", neuron_sdk="2.29")
    assert mod.__nki_dialect__ == "standalone"
    sim = simulate(mod.scale_into, x, np.zeros_like(x))
    np.testing.assert_array_equal(sim.outputs[0], 3 * x)
    found = _mixing(sim)
    assert [(f.file, f.line, f.severity) for f in found] == [("mixed.py", 4, "low")], found
    assert "2.30" in found[0].message and "2.29" in found[0].message, found[0].message
    assert sim.report.dialect == "standalone"


@pytest.mark.parametrize("sdk", [None, "2.30", "2.31.1"])
def test_mixing_the_dialects_for_sdk_2_30_or_an_unstated_sdk_stays_the_compile_error(sdk):
    with pytest.raises(KernelLoadError) as info:
        load_kernel(MIXED, display="mixed.py", neuron_sdk=sdk)
    assert (info.value.code, info.value.file, info.value.line) == ("err_mixed_nki_dialects", "mixed.py", 4)
    assert "2.30" in info.value.message


def _submission(sdk: str | None) -> Submission:
    task = {"id": "t", "title": "t"} | ({"neuron_sdk": sdk} if sdk else {})
    manifest = Manifest.model_validate({
        "task": task,
        "kernel": {"file": "kernel.py", "entry": "scale_into"},
        "inputs": [{"name": "x", "shape": [128, 16]}, {"name": "out", "shape": [128, 16], "distribution": "zeros"}],
        "reference": {"file": "ref.py", "entry": "ref"},
    })
    return Submission(manifest=manifest, files={"kernel.py": MIXED, "ref.py": "def ref(x, out):\n    return 3 * x\n"})


def test_the_task_s_sdk_reaches_the_simulation_of_a_submission():
    items = SimulationCollector().collect(_submission("2.29"))
    by_id = {i.id: i for i in items}
    assert by_id["sim.output:0"].metrics["matches"] == 1.0
    assert "sim.finding:mixed_nki_dialects:kernel.py:4" in by_id, sorted(by_id)
    items = SimulationCollector().collect(_submission(None))
    errors = [i for i in items if i.kind == "sim.error"]
    assert [(e.labels.get("code"), e.location.start_line) for e in errors] == [("err_mixed_nki_dialects", 4)], errors


def test_the_static_analyzers_read_a_mixing_file_as_the_standalone_kernel_the_simulator_runs():
    import libcst as cst

    from evidence.static.dialect import detect

    assert detect(cst.parse_module(MIXED)).dialect == "standalone"
    beta = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
    assert detect(cst.parse_module(beta)).dialect == "beta"
