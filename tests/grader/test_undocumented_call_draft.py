"""A beta kernel calling an `nl.*` name no documented NKI release has is judged as the import of one is: the
static finding names the call's line, the simulation stops there as the kernel's error (`sim.error`, not
`sim.incomplete`), neuron_platform is capped at 1, correctness at 1, and the criteria the run did not reach are
judged on the source alone. A documented op the simulator lacks stays `sim.incomplete` with no such finding.

Every kernel here is written for these tests (rows times two, 128 x 512 fp32)."""

from __future__ import annotations

from pathlib import Path

from tests.grader.scale_rows import drafted, gathered, write

KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.jit
def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    y = CALL
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
'''


def _bundle(tmp_path: Path, call: str):
    return gathered(write(tmp_path, KERNEL.replace("CALL", call)))


def test_a_call_no_release_documents_is_a_kernel_error_capped_like_the_import_of_one(tmp_path):
    sub, bundle = _bundle(tmp_path, "nl.fast_exp(t)")
    (finding,) = bundle.of_kind("nki.undocumented-nki-api")
    (stop,) = bundle.of_kind("sim.error")
    assert not bundle.of_kind("sim.incomplete")
    assert (finding.location.start_line, finding.labels["api"]) == (10, "nl.fast_exp")
    assert (stop.labels["code"], stop.location.start_line) == ("undocumented_api", 10)
    d = drafted(sub, bundle)
    assert d.criterion("neuron_platform").score == 1 and d.criterion("kernel_correctness").score == 1
    tiling = d.criterion("tiling")
    assert "unobserved" in {f.code for f in tiling.flags} and "kernel.py:10" in tiling.rationale


def test_a_documented_op_the_simulator_lacks_stays_incomplete_without_a_finding(tmp_path):
    _, bundle = _bundle(tmp_path, "nisa.quantize_mx(t)")
    assert not bundle.of_kind("nki.undocumented-nki-api", "sim.error")
    (limit,) = bundle.of_kind("sim.incomplete")
    assert limit.labels["code"] == "unsupported_op" and limit.location.start_line == 10


# The flag reaches the branch through a predicate helper: a branch the static analysis can decide (`if fast:` on a
# kwarg default) is ruled out there already and reports nothing; this one only the run decides.
BRANCHED = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def enabled(flag):
    return bool(flag)


@nki.jit
def scale_rows(x, fast=FAST):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    if enabled(fast):
        t = nl.fast_exp(t)
    nl.store(out, value=nl.multiply(t, 2.0))
    return out
'''


def _branched(tmp_path: Path, fast: bool):
    sub, bundle = gathered(write(tmp_path, BRANCHED.replace("FAST", str(fast))))
    return bundle, drafted(sub, bundle)


def test_a_call_on_a_branch_the_task_never_takes_is_low_and_leaves_the_criteria_observed(tmp_path):
    # the compiler traces only what runs: with fast=False it never meets nl.fast_exp, and the simulator, which
    # stops with undocumented_api wherever such a call runs, ran the task to the end (before: high, the run's
    # criteria read as unobserved and neuron_platform capped at 1)
    bundle, d = _branched(tmp_path, fast=False)
    (finding,) = bundle.of_kind("nki.undocumented-nki-api")
    assert finding.location.start_line == 14 and finding.severity.value == "low"
    assert finding.labels["trace"] == "not_traced" and finding.labels["form"] == "call"
    assert not bundle.of_kind("sim.error", "sim.incomplete") and bundle.of_kind("sim.output")
    for c in d.criteria:
        assert "unobserved" not in {f.code for f in c.flags}, (c.criterion_id, c.rationale)
    assert d.criterion("kernel_correctness").score == 5 and d.criterion("neuron_platform").score > 1


def test_a_kwarg_default_the_static_analysis_decides_reports_nothing(tmp_path):
    _, bundle = gathered(write(tmp_path, BRANCHED.replace("FAST", "False").replace("if enabled(fast):", "if fast:")))
    assert not bundle.of_kind("nki.undocumented-nki-api", "sim.error", "sim.incomplete")


def test_the_same_call_on_the_taken_path_still_stops_the_run_and_caps(tmp_path):
    bundle, d = _branched(tmp_path, fast=True)
    (finding,) = bundle.of_kind("nki.undocumented-nki-api")
    (stop,) = bundle.of_kind("sim.error")
    assert "trace" not in finding.labels and finding.severity.value == "high"
    assert (stop.labels["code"], stop.location.start_line) == ("undocumented_api", 14)
    assert d.criterion("neuron_platform").score == 1
    assert "unobserved" in {f.code for f in d.criterion("tiling").flags}
