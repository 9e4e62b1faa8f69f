"""The nki-simulator collector on small in-memory submissions (each run is two sandboxed children)."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.model import Severity
from evidence.nki.collector import SimulationCollector
from evidence.sandbox.config import SandboxConfig
from evidence.submission import Manifest, Submission

HEAD = """import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

"""
GOOD = HEAD + """@nki.jit
def kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[i * 128:(i + 1) * 128, :])
        y = nl.load(b[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.add(x, y))
    return out
"""
REF = "def ref(a, b):\n    return a + b\n"


def submission(kernel: str, ref: str = REF, rtol=None, inputs=None, atol=None, grid=()) -> Submission:
    manifest = Manifest.model_validate({
        "task": {"id": "t", "title": "t", "rtol": rtol, "atol": atol},
        "kernel": {"file": "kernel.py", "entry": "kernel", "grid": list(grid)},
        "inputs": inputs or [{"name": "a", "shape": [256, 64]}, {"name": "b", "shape": [256, 64]}],
        "reference": {"file": "ref.py", "entry": "ref"},
    })
    return Submission(manifest=manifest, files={"kernel.py": kernel, "ref.py": ref})


def collect(sub: Submission, **attrs):
    c = SimulationCollector(**attrs)
    items = c.collect(sub)
    assert {i.kind for i in items} <= set(c.kinds)
    return {i.kind: i for i in items}, items


def test_matching_kernel_gives_output_and_trace_items_with_stable_ids():
    by_kind, items = collect(submission(GOOD))
    out, trace = by_kind["sim.output"], by_kind["sim.trace"]
    assert out.id == "sim.output:0" and out.severity == Severity.info
    assert out.metrics["matches"] == 1.0 and out.metrics["rel_l2"] == 0.0 and out.metrics["elements"] == 256 * 64
    assert out.labels == {"dtype": "float32", "shape": "256x64", "reference_dtype": "float32", "tolerance": "dtype_default"}
    assert trace.metrics["dma_count"] == 6 and trace.metrics["instr_vector"] == 2
    assert trace.metrics["hbm_write_bytes"] == 256 * 64 * 4 and trace.metrics["partition_utilisation"] == 1.0
    assert out.location.file == "kernel.py" and out.location.start_line == 5
    assert [i.id for i in collect(submission(GOOD))[1]] == [i.id for i in items]


MATMUL = HEAD + """@nki.jit
def kernel(a, b):
    out = nl.ndarray((256, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(2):
        for n in nl.affine_range(2):
            acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(2):
                acc += nl.matmul(nl.load(a[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128]),
                                 nl.load(b[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512]), transpose_x=True)
            nl.store(out[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=nl.copy(acc))
    return out
"""


@pytest.mark.parametrize("run", range(3))
def test_the_simulators_own_worker_threads_are_not_the_submissions(run):
    """TensorE work runs on worker threads in the kernel's child; the sandbox's monitor counts OS
    threads left after the call, so the workers must be gone from /proc before simulate() returns."""
    sub = submission(MATMUL, ref="def ref(a, b):\n    return a.T @ b\n",
                     inputs=[{"name": "a", "shape": [256, 256], "dtype": "bfloat16"},
                             {"name": "b", "shape": [256, 1024], "dtype": "bfloat16"}])
    by_kind, items = collect(sub)
    assert by_kind["sim.output"].metrics["matches"] == 1.0
    assert not [i.kind for i in items if i.kind.startswith("security.")]


def test_mismatching_kernel_is_high_and_nan_output_is_critical():
    wrong = GOOD.replace("nl.add(x, y)", "nl.add(x, nl.multiply(y, 1.01))")
    by_kind, _ = collect(submission(wrong))
    out = by_kind["sim.output"]
    assert out.severity == Severity.high and out.metrics["matches"] == 0.0 and out.metrics["mismatch_fraction"] > 0.5
    by_kind, _ = collect(submission(wrong, rtol=0.05, atol=0.1))  # the task's tolerance wins over the dtype default
    assert by_kind["sim.output"].metrics["matches"] == 1.0 and by_kind["sim.output"].metrics["rtol"] == 0.05
    nan = GOOD.replace("nl.add(x, y)", "nl.log(nl.subtract(x, 100.0))")
    assert collect(submission(nan))[0]["sim.output"].severity == Severity.critical


def test_crashing_kernel_gives_sim_error_at_its_line():
    crash = GOOD.replace("        y = nl.load", "        z = [1][3]\n        y = nl.load")
    by_kind, _ = collect(submission(crash))
    err = by_kind["sim.error"]
    assert err.labels["code"] == "python_error" and "IndexError" in err.labels["message"]
    assert err.severity == Severity.critical and err.location.start_line == 10
    assert "sim.output" not in by_kind


def test_constraint_violation_names_code_and_line():
    bad = GOOD.replace("a[i * 128:(i + 1) * 128, :]", "a[0:256, :]")
    by_kind, _ = collect(submission(bad))
    err = by_kind["sim.error"]
    assert err.labels["code"] == "err_num_partition_exceed_arch_limit" and err.location.start_line == 9
    assert err.id == "sim.error:err_num_partition_exceed_arch_limit"


def test_timeout_is_reported():
    slow = GOOD.replace("    return out", "    while True:\n        pass\n    return out")
    by_kind, _ = collect(submission(slow), timeout_s=2.0)
    # A resource limit is the simulator's, not evidence that the kernel is wrong.
    assert by_kind["sim.incomplete"].labels["code"] == "timeout" and "sim.error" not in by_kind


def test_cpu_limit_is_reported_and_a_plain_dict_configures_the_sandbox():
    slow = GOOD.replace("    return out", "    while True:\n        pass\n    return out")
    by_kind, _ = collect(submission(slow), timeout_s=60.0, cpu_limit_s=1, sandbox={"workers": 1})
    assert by_kind["sim.incomplete"].labels["code"] == "cpu_limit"


def test_memory_limit_is_reported():
    hog = GOOD.replace("    return out", "    junk = np.ones((1024, 1024, 1024), np.float32)\n    return out")
    by_kind, _ = collect(submission(hog), memory_limit_bytes=2 * 2**30)
    assert by_kind["sim.incomplete"].labels["code"] == "memory_limit"


def test_an_op_the_simulator_lacks_is_incomplete_not_a_kernel_defect():
    # a collective across SPMD instances cannot be simulated (instances run one after another)
    lacking = GOOD.replace("nl.add(x, y)", "nl.all_reduce(x, op=np.add, program_axes=[0])")
    by_kind, _ = collect(submission(lacking, grid=[2]))
    item = by_kind["sim.incomplete"]
    assert item.labels["code"] == "unsupported_op" and "all_reduce" in item.labels["message"]
    assert item.severity == Severity.medium and "sim.error" not in by_kind


NEW_DIALECT = """import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in range(a.shape[0] // 128):
        x = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a[i * 128:(i + 1) * 128, :])
        nisa.dma_copy(dst=y, src=b[i * 128:(i + 1) * 128, :])
        nisa.tensor_tensor(x, x, y, op=nl.add)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=x)
    return out
"""


def test_standalone_dialect_is_simulated_and_recorded_and_reference_errors_are_the_references():
    by_kind, _ = collect(submission(NEW_DIALECT))
    assert by_kind["sim.output"].metrics["matches"] == 1.0
    assert by_kind["sim.trace"].labels["dialect"] == "standalone" and by_kind["sim.trace"].metrics["dma_count"] == 6
    assert collect(submission(GOOD))[0]["sim.trace"].labels["dialect"] == "beta"
    by_kind, _ = collect(submission(GOOD, ref="def ref(a, b):\n    return a @ b @ b\n"))
    rerr = by_kind["sim.reference_error"]
    assert "ValueError" in rerr.labels["message"] and rerr.location.file == "ref.py" and rerr.location.start_line == 2
    assert "sim.trace" in by_kind and "sim.output" not in by_kind


PARTIAL = GOOD.replace("nl.store(out[i * 128:(i + 1) * 128, :]", "nl.store(out[0:128, :]")


@pytest.mark.parametrize("body, code, lines, policy", [
    ("    while True:\n        pass\n", "timeout", (3, 4), True),  # the child's watchdog names where it was stuck
    ("    junk = np.ones((64, 1024, 1024, 1024), np.float32)\n", "memory_limit", (3,), True),
    ("    raise SystemExit(3)\n", "python_error", (3,), True),
    ("    import os\n    os._exit(3)\n", "crashed", (4,), False),  # (the import policy would not run it at all)
])
def test_a_failing_reference_is_the_references_fault_and_the_kernel_results_stay(body, code, lines, policy):
    ref = "import numpy as np\ndef ref(a, b):\n" + body + "    return a + b\n"
    by_kind, items = collect(submission(PARTIAL, ref=ref), reference_timeout_s=1.0, timeout_s=30.0,
                             memory_limit_bytes=2 * 2**30, sandbox=SandboxConfig(import_policy=policy))
    rerr = by_kind["sim.reference_error"]
    assert rerr.labels["code"] == code and rerr.location.file == "ref.py" and rerr.location.start_line in lines
    assert "sim.incomplete" not in by_kind and "sim.error" not in by_kind and "sim.output" not in by_kind
    assert by_kind["sim.trace"].metrics["dma_count"] == 6  # the kernel's trace survives
    assert "output_not_fully_written" in {i.labels["code"] for i in items if i.kind == "sim.finding"}


def test_unwritten_output_elements_are_counted_apart_from_nan():
    first_tile_only = GOOD.replace("nl.affine_range(a.shape[0] // 128)", "nl.affine_range(1)")
    by_kind, _ = collect(submission(first_tile_only))
    out = by_kind["sim.output"]
    assert out.metrics["unwritten_count"] == 128 * 64 and out.metrics["nan_count"] == 0.0
    assert out.metrics["mismatch_fraction"] == 0.5 and out.metrics["matches"] == 0.0
    assert out.severity == Severity.high and "8192 elements never written" in out.detail


def test_non_fatal_findings_become_sim_finding_items():
    by_kind, items = collect(submission(PARTIAL))
    codes = {i.labels["code"]: i for i in items if i.kind == "sim.finding"}
    assert codes["err_unexpected_output_dependencies"].severity == Severity.high
    assert codes["err_unexpected_output_dependencies"].location.start_line == 11
    assert "output_not_fully_written" in codes


def test_without_reference_or_inputs_the_kernel_is_not_run_and_one_item_says_so():
    sub = submission(GOOD)
    assert SimulationCollector().applies(sub)
    no_ref = Submission(manifest=sub.manifest.model_copy(update={"reference": None}), files=sub.files)
    no_inputs = Submission(manifest=sub.manifest.model_copy(update={"inputs": []}), files=sub.files)
    for case, reason in ((no_ref, "no_reference"), (no_inputs, "no_inputs")):
        assert SimulationCollector().applies(case)
        (item,) = SimulationCollector().collect(case)
        assert (item.kind, item.labels["reason"], item.severity) == ("sim.not_run", reason, Severity.info)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_low_precision_inputs_use_dtype_default_tolerance(dtype):
    inputs = [{"name": "a", "shape": [128, 32], "dtype": dtype}, {"name": "b", "shape": [128, 32], "dtype": dtype}]
    ref = "import numpy as np\ndef ref(a, b):\n    return (a.astype(np.float64) + b.astype(np.float64))\n"
    out = collect(submission(GOOD, ref=ref, inputs=inputs))[0]["sim.output"]
    assert out.labels["dtype"] == dtype and out.metrics["matches"] == 1.0
    assert out.metrics["rtol"] == {"bfloat16": 2e-2, "float32": 1e-4}[dtype]
    assert np.isfinite(out.metrics["rel_l2"])


MEAN_SQUARE = HEAD + """@nki.jit
def kernel(a):
    out = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    nl.store(out, value=nl.mean(nl.square(x, dtype=nl.float32), axis=[1], keepdims=True))
    return out
"""


@pytest.mark.parametrize("scale, matches", [(1.0, True), (1.5, False)])
def test_a_reference_numpy_computes_in_bf16_does_not_fail_a_kernel_that_matches_it_in_float64(scale, matches):
    # numpy evaluates `a * a` and the mean in bfloat16 (rel L2 ~0.2 off); the kernel keeps fp32 statistics
    inputs = [{"name": "a", "shape": [128, 1024], "dtype": "bfloat16"}]
    ref = "import numpy as np\ndef ref(a):\n    return np.mean(a * a, axis=1, keepdims=True)\n"
    out = collect(submission(MEAN_SQUARE.replace("keepdims=True)", f"keepdims=True) * {scale}"), ref=ref,
                             inputs=inputs))[0]["sim.output"]
    assert (out.metrics["matches"] == 1.0) == matches
    if matches:
        assert out.severity == Severity.info and "evaluated on float64 inputs" in out.title
        assert out.labels["reference_evaluation"] == "float64" and float(out.labels["reference_own_rel_l2"]) > 0.05
        assert out.metrics["rel_l2"] < 1e-5
    else:  # a wrong kernel matches neither evaluation
        assert out.severity == Severity.high and "reference_evaluation" not in out.labels


# an output stored inside its K loop (sweep 10): the overwritten stores are a sim.finding graded by their share
STORED_EACH_PASS = HEAD + """@nki.jit
def kernel(a, b):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(a.shape[0] // 128):
        x = nl.load(a[i * 128:(i + 1) * 128, :])
        acc = nl.add(acc, x)
        nl.store(out, value=acc)
    return out
"""


def test_stores_overwritten_unread_are_a_finding_graded_by_their_share():
    ref = "def ref(a, b):\n    return a.reshape(-1, 128, 64).sum(0)\n"
    by_kind, items = collect(submission(STORED_EACH_PASS, ref, inputs=[{"name": "a", "shape": [1024, 64]},
                                                                       {"name": "b", "shape": [1, 1]}]))
    (f,) = [i for i in items if i.kind == "sim.finding" and i.labels["code"] == "hbm_store_overwritten"]
    assert f.severity == Severity.medium and f.location.start_line == 12  # 7 of 8 stores overwritten unread
    assert "(88%)" in f.title and by_kind["sim.output"].metrics["matches"] == 1.0
