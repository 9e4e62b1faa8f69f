"""Static findings checked against the trace (issue 10.3): confirmed, contradicted (with a conflict item), unchecked."""

from __future__ import annotations

from evidence.corroborate import CONFLICT_KIND, CORROBORATION_VERSION, corroborate
from evidence.gather import gather
from evidence.model import EvidenceItem, Location
from evidence.submission import Manifest, Submission


def _item(kind, line, end=None, metrics=None, labels=None, ident=None):
    return EvidenceItem(id=ident or f"{kind}:k.py:{line}", kind=kind, analyzer="t@1", title=kind,
                        location=Location(file="k.py", start_line=line, end_line=end or line),
                        metrics=metrics or {}, labels=labels or {})


TRACE = _item("sim.trace", 5, metrics={"partition_utilisation": 1.0}, ident="sim.trace:k.py")
LOOP = _item("nki.loop", 8, 14)


def _line(line, instructions, partitions, tiny=0):
    return _item("sim.line", line, metrics={"instructions": instructions, "partitions_mean": partitions,
                                            "tiny_instructions": tiny})


def _by_kind(items):
    return {i.kind: i for i in items}


def test_one_partition_loop_claim_against_128_partition_compute_is_a_conflict():
    finding = _item("nki.thread-emulation", 10, metrics={"loop_line": 8}, labels={"pattern": "loop"})
    out = _by_kind(corroborate([TRACE, LOOP, finding, _line(10, 0, 0), _line(12, 4, 128.0)]))
    assert out["nki.thread-emulation"].labels["trace"] == "contradicted"
    conflict = out[CONFLICT_KIND]
    assert conflict.labels["static"] == finding.id and conflict.labels["dynamic"] == "sim.line:k.py:12"
    assert conflict.location == finding.location and "128 partitions" in conflict.title


def test_one_partition_compute_confirms_the_claim_without_a_conflict():
    finding = _item("nki.thread-emulation", 10, metrics={"loop_line": 8}, labels={"pattern": "loop"})
    out = corroborate([TRACE, LOOP, finding, _line(11, 512, 1.0)])
    assert _by_kind(out)["nki.thread-emulation"].labels["trace"] == "confirmed"
    assert CONFLICT_KIND not in _by_kind(out)


def test_spmd_instances_are_judged_by_the_kernels_partition_use():
    finding = _item("nki.thread-emulation", 10, labels={"pattern": "spmd_instance_per_row"})
    narrow = TRACE.model_copy(update={"metrics": {"partition_utilisation": 1 / 128}})
    assert _by_kind(corroborate([narrow, finding]))["nki.thread-emulation"].labels["trace"] == "confirmed"
    assert _by_kind(corroborate([TRACE, finding]))["nki.thread-emulation"].labels["trace"] == "contradicted"


def test_per_element_loops_need_mostly_tiny_instructions():
    finding = _item("nki.per-element-loop", 11, metrics={"loop_line": 8})
    walked = corroborate([TRACE, LOOP, finding, _line(11, 2048, 128.0, tiny=2048)])
    assert _by_kind(walked)["nki.per-element-loop"].labels["trace"] == "confirmed"
    wide = corroborate([TRACE, LOOP, finding, _line(11, 16, 128.0, tiny=0)])
    assert _by_kind(wide)["nki.per-element-loop"].labels["trace"] == "contradicted"


def test_a_compiler_limit_claim_on_a_line_the_simulator_ran_through_is_contradicted():
    finding = _item("nki.partition-over-128", 12)
    assert _by_kind(corroborate([TRACE, finding, _line(12, 1, 128.0)]))["nki.partition-over-128"].labels["trace"] == "contradicted"
    stopped = corroborate([TRACE, _item("sim.error", 12), finding, _line(12, 1, 128.0)])
    assert _by_kind(stopped)["nki.partition-over-128"].labels["trace"] == "confirmed"
    assert _by_kind(corroborate([TRACE, finding]))["nki.partition-over-128"].labels["trace"] == "unchecked"


def test_without_a_trace_every_claim_is_unchecked():
    finding = _item("nki.thread-emulation", 10, metrics={"loop_line": 8}, labels={"pattern": "loop"})
    (out,) = corroborate([finding])
    assert out.labels["trace"] == "unchecked" and out.labels["trace_reason"] == "no simulation trace"


BIAS_PER_BATCH = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(x, bias):
    B, P, F = x.shape
    out = nl.ndarray((B, P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(B):
        t = nl.load(x[b])
        row = nl.load(bias[b:b + 1, :])
        y = nl.add(t, nl.broadcast_to(row, shape=(P, F)))
        nl.store(out[b], value=y)
    return out
"""


def test_a_per_batch_bias_row_broadcast_to_128_partitions_is_not_thread_emulation():
    """Static sees a 1-partition load that moves with the loop; the trace sees 128-partition work."""
    manifest = Manifest.model_validate({
        "task": {"id": "t", "title": "t"}, "kernel": {"file": "kernel.py", "entry": "kernel"},
        "inputs": [{"name": "x", "shape": [4, 128, 256]}, {"name": "bias", "shape": [4, 256]}],
        "reference": {"file": "ref.py", "entry": "ref"}})
    ref = "def ref(x, bias):\n    return x + bias[:, None, :]\n"
    bundle = gather(Submission(manifest=manifest, files={"kernel.py": BIAS_PER_BATCH, "ref.py": ref}))
    (finding,) = bundle.of_kind("nki.thread-emulation")
    assert finding.location.start_line == 11 and finding.labels["trace"] == "contradicted"
    (conflict,) = bundle.of_kind(CONFLICT_KIND)
    assert conflict.labels["static"] == finding.id and "sim.line:kernel.py:12" in conflict.labels["dynamic"]
    assert bundle.analyzers["corroboration"] == CORROBORATION_VERSION


def _output(dtype, rel_l2, ident="sim.output:0"):
    return _item("sim.output", 5, metrics={"rel_l2": rel_l2, "matches": 1.0}, labels={"dtype": dtype}, ident=ident)


def test_precision_findings_are_measured_against_the_output_dtypes_rounding():
    finding = _item("nki.low-precision-accumulator", 12, labels={"role": "statistic"})
    # bf16: one final rounding gives about 1.6e-3; half a unit roundoff is 2**-9 = 1.95e-3
    assert _by_kind(corroborate([_output("bfloat16", 2.1e-3), finding]))["nki.low-precision-accumulator"].labels[
        "measured"] == "shown"
    assert _by_kind(corroborate([_output("bfloat16", 1.6e-3), finding]))["nki.low-precision-accumulator"].labels[
        "measured"] == "not_shown"
    assert _by_kind(corroborate([_output("float32", 1e-6), finding]))["nki.low-precision-accumulator"].labels[
        "measured"] == "shown"
    (alone,) = corroborate([finding])
    assert alone.labels["measured"] == "unchecked"
    assert CONFLICT_KIND not in _by_kind(corroborate([_output("bfloat16", 1.6e-3), finding]))


def _mismatch(fraction, rel_l2=2e-3, bound=2e-2, task=0.0, nan=0.0):
    metrics = {"rel_l2": rel_l2, "rel_l2_bound": bound, "matches": 0.0, "mismatch_fraction": fraction,
               "elements": 262144.0, "task_tolerance": task, "nan_count": nan, "inf_count": 0.0,
               "unwritten_count": 0.0}
    return EvidenceItem(id="sim.output:0", kind="sim.output", analyzer="t@1", severity="high",
                        title="Output 0 does not match the reference", detail="2 elements outside.",
                        metrics=metrics, labels={"dtype": "bfloat16"})


def _numerics(verdict, bound="informative"):
    return EvidenceItem(id="numerics.verdict:0", kind="numerics.verdict", analyzer="t@1", title="verdict",
                        labels={"verdict": verdict, "bound": bound})


def test_isolated_outliers_of_an_output_the_error_model_finds_right_are_said_to_be_so():
    # a few elements just outside the element-wise rule, rel L2 within its bound, every trial within expected
    # variation: the two analyzers agree the output is right, and the item names the outliers
    (out, _) = corroborate([_mismatch(2 / 262144), _numerics("within")])
    assert out.labels["outliers"] == "isolated" and out.severity == "medium"
    assert "except 2 isolated elements of 262144" in out.title and "[numerics.verdict:0]" in out.detail
    (out, _) = corroborate([_mismatch(0.0023), _numerics("within")])  # 0.23%: a bf16 mixed-precision backward pass
    assert out.labels["outliers"] == "isolated"
    for items in ([_mismatch(2 / 262144), _numerics("defect")],  # the error model disagrees
                  [_mismatch(2 / 262144)],  # no error model
                  [_mismatch(0.02), _numerics("within")],  # widespread, not isolated
                  [_mismatch(2 / 262144, rel_l2=3e-2), _numerics("within")],  # beyond the dtype's L2 bound
                  [_mismatch(2 / 262144, task=1.0), _numerics("within")],  # the task's own tolerance
                  [_mismatch(2 / 262144, nan=1.0), _numerics("within")]):  # a NaN is never an outlier
        out = corroborate(items)[0]
        assert "outliers" not in out.labels and out.severity == "high", items


def test_dma_transposes_carry_the_cost_models_regime():
    finding = _item("nki.load-transpose-in-loop", 20)
    roofline = EvidenceItem(id="perf.roofline", kind="perf.roofline", analyzer="t@1", title="roofline",
                            labels={"regime": "compute-bound"})
    assert _by_kind(corroborate([finding, roofline]))["nki.load-transpose-in-loop"].labels["regime"] == "compute-bound"
    assert _by_kind(corroborate([finding]))["nki.load-transpose-in-loop"].labels["regime"] == "unknown"


def _transpose_whatif(line, speedup, file="k.py"):
    return EvidenceItem(id=f"perf.whatif:dma-transpose:{line}", kind="perf.whatif", analyzer="t@1", title="what-if",
                        location=Location(file=file, start_line=line, end_line=line),
                        metrics={"speedup": speedup}, labels={"code": "dma-transpose"})


def test_dma_transposes_carry_what_the_cost_model_says_their_fix_gains():
    finding = _item("nki.load-transpose-in-loop", 20, 24).model_copy(update={"severity": "medium"})
    off = _by_kind(corroborate([finding, _transpose_whatif(20, 1.004)]))["nki.load-transpose-in-loop"]
    assert off.labels["impact"] == "negligible" and off.severity == "medium"  # still a true finding
    assert "off the critical path: the cost model estimates its fix at 1.00x [perf.whatif:dma-transpose:20]" in off.title
    hot = _by_kind(corroborate([finding, _transpose_whatif(20, 1.8)]))["nki.load-transpose-in-loop"]
    assert hot.labels["impact"] == "material" and hot.title == finding.title
    # another line's or another file's what-if says nothing about this finding
    for other in (_transpose_whatif(30, 1.0), _transpose_whatif(20, 1.0, file="helper.py")):
        assert _by_kind(corroborate([finding, other]))["nki.load-transpose-in-loop"].labels["impact"] == "unknown"


def _dma_line(n, transfers, bytes_per_partition, partitions=128.0):
    return _item("sim.line", n, metrics={"dma_count": float(transfers), "dma_partitions_mean": partitions,
                                          "dma_bytes": float(transfers * bytes_per_partition * partitions)})


def test_small_transfers_the_trace_already_counts_as_a_pattern_say_so():
    # nki-library's gen_mask: one line issues two 16 B-per-partition copies beside large transfers; the trace's
    # "pattern" verdict and the static finding are the same transfers and must not cost two points
    finding = _item("nki.small-dma", 20).model_copy(update={"severity": "medium"})
    sizes = _item("sim.dma_sizes", 5, labels={"small_transfers": "pattern"})
    out = _by_kind(corroborate([TRACE, sizes, finding, _dma_line(20, 2, 16)]))["nki.small-dma"]
    assert out.labels["dma_sizes"] == "pattern"
    mostly = sizes.model_copy(update={"labels": {"small_transfers": "mostly"}})
    assert _by_kind(corroborate([TRACE, mostly, finding, _dma_line(20, 2, 16)]))["nki.small-dma"].labels["dma_sizes"] == "mostly"
    for lines in ([_dma_line(30, 2, 16)],  # the pattern is another line's
                  [_dma_line(20, 1, 16)],  # one transfer: as batched as the data allows, not in the pattern
                  [_dma_line(20, 4, 4096)]):  # large transfers on the finding's line
        assert "dma_sizes" not in _by_kind(corroborate([TRACE, sizes, finding, *lines]))["nki.small-dma"].labels
    none = sizes.model_copy(update={"labels": {"small_transfers": "none"}})
    assert "dma_sizes" not in _by_kind(corroborate([TRACE, none, finding, _dma_line(20, 2, 16)]))["nki.small-dma"].labels


def test_a_dma_transpose_on_lines_the_completed_run_never_issued_is_low_and_says_so():
    # the eighth sweep: attention's transposed-K path (behind a layout flag held in a config object the static
    # analysis cannot read) was a medium finding on a task that never takes it
    finding = _item("nki.load-transpose-in-loop", 20, 24).model_copy(update={"severity": "medium"})

    def line(n, kept="all"):
        return _line(n, 4, 128.0).model_copy(update={"labels": {"lines": kept}})

    out = _by_kind(corroborate([TRACE, finding, line(30)]))["nki.load-transpose-in-loop"]
    assert out.severity == "low" and out.labels["trace"] == "not_executed"
    assert "not run for this task: lines 20-24 issued no instruction" in out.title
    ran = _by_kind(corroborate([TRACE, finding, line(22)]))["nki.load-transpose-in-loop"]
    assert ran.severity == "medium" and "trace" not in ran.labels
    stopped = _item("sim.error", 5)
    unfinished = _by_kind(corroborate([TRACE, stopped, finding, line(30)]))["nki.load-transpose-in-loop"]
    assert unfinished.severity == "medium" and "trace" not in unfinished.labels
    # sim.line items kept for the busiest lines only: a line without one may have run
    partial = _by_kind(corroborate([TRACE, finding, line(30, "top 64")]))["nki.load-transpose-in-loop"]
    assert partial.severity == "medium" and "trace" not in partial.labels


def test_line_items_say_whether_every_line_that_ran_has_one():
    import numpy as np

    from evidence.nki import load_kernel, simulate
    from evidence.nki.trace_items import MAX_LINE_ITEMS, trace_fact_items

    def labels(n_lines):
        body = "".join(f"    nisa.tensor_scalar(t, t, op0=nl.add, operand0={i}.0)\n" for i in range(n_lines))
        src = ("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\ndef k(x):\n"
               "    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)\n    nisa.dma_copy(dst=t, src=x)\n"
               + body + "    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)\n"
               "    nisa.dma_copy(dst=out, src=t)\n    return out\n")
        report = simulate(load_kernel(src, display="k.py").k, np.zeros((128, 4), np.float32)).report
        items = trace_fact_items(report, "k.py", "t@1", None,
                                 lambda f, n: Location(file="k.py", start_line=n, end_line=n) if f == "k.py" else None)
        return {i.labels["lines"] for i in items if i.kind == "sim.line"}

    assert labels(3) == {"all"}
    assert labels(MAX_LINE_ITEMS + 5) == {f"top {MAX_LINE_ITEMS}"}


def _small_dma_whatif(speedup, line=40):
    return EvidenceItem(id=f"perf.whatif:small-dma:{line}", kind="perf.whatif", analyzer="t@1", title="what-if",
                        location=Location(file="k.py", start_line=line, end_line=line),
                        metrics={"speedup": speedup}, labels={"code": "small-dma"})


def test_small_transfer_findings_carry_what_batching_the_kernels_small_transfers_gains():
    # one what-if prices all of a kernel's small transfers together, wherever it is located
    finding = _item("nki.small-dma", 20)
    assert _by_kind(corroborate([finding, _small_dma_whatif(1.13)]))["nki.small-dma"].labels["whatif"] == "minor"
    assert _by_kind(corroborate([finding, _small_dma_whatif(1.3)]))["nki.small-dma"].labels["whatif"] == "material"
    assert _by_kind(corroborate([finding]))["nki.small-dma"].labels["whatif"] == "none"
    transpose = _transpose_whatif(20, 3.0)  # another fix's what-if at the finding's own line says nothing about it
    assert _by_kind(corroborate([finding, transpose]))["nki.small-dma"].labels["whatif"] == "none"


def test_isolated_outliers_stay_isolated_when_the_error_model_cannot_judge_the_output():
    # nki-library's attention_bwd in bf16 over 4,608 keys: the error model's bound is vacuous (exp through the
    # reference on |inputs| gave kappa 1.6e5), so its "cannot tell" says nothing against the output; rel L2 within
    # the dtype's bound and 23 isolated elements still mean the output as a whole matches (it read "does not match")
    (out, _) = corroborate([_mismatch(23 / 262144), _numerics("cannot_tell", bound="vacuous")])
    assert out.labels["outliers"] == "isolated" and out.severity == "medium"
    assert "cannot judge it (its bound is vacuous)" in out.detail
    for items in ([_mismatch(23 / 262144), _numerics("cannot_tell")],  # between the bound and twice it: undecided
                  [_mismatch(23 / 262144, rel_l2=0.9), _numerics("cannot_tell", bound="vacuous")]):  # a lost term
        out = corroborate(items)[0]
        assert "outliers" not in out.labels and out.severity == "high", items


def test_an_undocumented_call_a_completed_run_never_reached_is_low_and_not_traced():
    from evidence.model import Severity

    call = _item("nki.undocumented-nki-api", 14, labels={"api": "nl.fast_exp", "form": "call"}).model_copy(
        update={"severity": Severity.high})
    imported = _item("nki.undocumented-nki-api", 3, labels={"api": "neuronxcc.nki.ops", "form": "import"},
                     ident="imp").model_copy(update={"severity": Severity.high})
    out = {i.id: i for i in corroborate([TRACE, call, imported])}
    assert out[call.id].labels["trace"] == "not_traced" and out[call.id].severity == Severity.low
    assert "trace" not in out["imp"].labels and out["imp"].severity == Severity.high  # module code always runs
    stop = _item("sim.error", 14, labels={"code": "undocumented_api"})
    stopped = {i.id: i for i in corroborate([TRACE, call, stop])}
    assert "trace" not in stopped[call.id].labels and stopped[call.id].severity == Severity.high
    assert "trace" not in {i.id: i for i in corroborate([call])}[call.id].labels  # no trace: nothing to tell
