"""The accuracy classes of issues 10 and 16.5, end to end: a kernel of our own per class (the `acc-*`
items of the calibration set), the evidence it must produce and the rules draft it must get.

Each submission is gathered and drafted once per session (the rules drafter, the real collectors
in their sandboxed child processes).
"""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path

import pytest

from grader.draft import Draft
from grader.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "evals" / "calibration" / "nki-review-v1"
pytestmark = pytest.mark.slow


@cache
def drafted(path: str) -> Draft:
    return evaluate(Path(path))


def _draft(item: str) -> Draft:
    return drafted(str(SET / item))


def _kinds(d: Draft) -> dict[str, list]:
    out: dict[str, list] = {}
    for i in d.evidence.items:
        out.setdefault(i.kind, []).append(i)
    return out


def _scores(d: Draft, *criteria: str) -> dict[str, int | str | None]:
    return {c: (d.criterion(c).score if d.criterion(c).status == "scored" else d.criterion(c).status) for c in criteria}


def test_multi_kernel_file_is_judged_on_its_entry_kernel_only():
    d = _draft("acc-multikernel-l2norm")
    kinds = _kinds(d)
    (skipped,) = kinds["nki.out_of_scope"]
    assert skipped.labels["kernels"] == "l2norm_v1,l2norm_v2"
    assert [k.labels["name"] for k in kinds["nki.kernel"]] == ["l2norm_v3"]
    # v1's one-row loop and bf16 sum, v2's bf16 sum and dropped tail are not the submission's
    assert not {"nki.thread-emulation", "nki.low-precision-accumulator", "nki.ragged-without-mask"} & set(kinds)
    assert _scores(d, "tiling", "data_movement", "precision", "numerical_correctness", "neuron_platform") == {
        "tiling": 5, "data_movement": 5, "precision": 5, "numerical_correctness": 5, "neuron_platform": 5}


def test_flag_and_tuple_parameters_are_python_values():
    d = _draft("acc-flag-params")
    assert "nki.python-logic-on-tile" not in _kinds(d)
    (out,) = _kinds(d)["sim.output"]
    assert out.metrics["matches"] == 1.0  # the (128, 512) tuple reached the kernel and the reference
    assert _scores(d, "kernel_correctness", "neuron_platform", "tiling") == {
        "kernel_correctness": 5, "neuron_platform": 5, "tiling": 5}


def test_a_broadcast_row_is_a_conflict_for_a_reviewer_not_thread_emulation():
    d = _draft("acc-broadcast-bias")
    kinds = _kinds(d)
    (static,) = kinds["nki.thread-emulation"]
    assert static.labels["trace"] == "contradicted"
    (conflict,) = kinds["evidence.conflict"]
    assert conflict.labels["static"] == static.id
    tiling = d.criterion("tiling")
    assert tiling.score == 5 and any(f.code == "evidence_conflict" for f in tiling.flags)
    assert {static.id, conflict.id} <= {c.evidence_id for c in tiling.citations}
    assert _scores(d, "data_movement", "performance", "neuron_platform") == {
        "data_movement": 5, "performance": 4, "neuron_platform": 5}


def test_bf16_statistics_from_bn_stats_cost_precision_and_show_in_the_measured_error():
    d = _draft("acc-standardize-bnstats-bf16")
    findings = _kinds(d)["nki.low-precision-accumulator"]
    assert {f.labels["op"] for f in findings} == {"nisa.bn_stats", "nisa.bn_aggr"}
    assert all(f.labels["role"] == "statistic" and f.labels["measured"] == "shown" for f in findings)
    assert _scores(d, "precision", "numerical_correctness", "neuron_platform") == {
        "precision": 2, "numerical_correctness": 3, "neuron_platform": 5}


def test_a_hand_rolled_gelu_is_one_platform_lapse_and_a_performance_cost():
    d = _draft("acc-gelu-handrolled")
    (f,) = _kinds(d)["nki.handrolled-activation"]
    assert f.labels["activation"] == "gelu" and f.metrics["instructions"] >= 5
    assert _scores(d, "performance", "neuron_platform", "precision") == {
        "performance": 3, "neuron_platform": 4, "precision": 5}


def test_a_block_dimension_matmul_with_128_wide_moving_tiles_is_under_filled():
    d = _draft("acc-matmul-blockdim-128")
    (f,) = _kinds(d)["nki.matmul-underfilled"]
    assert (f.metrics["moving_free"], f.metrics["moving_free_possible"]) == (128, 512)
    assert _scores(d, "tiling", "performance", "data_movement") == {"tiling": 3, "performance": 3, "data_movement": 2}


def test_two_k_blocks_summed_in_bf16_are_minor_for_precision_and_a_defect_for_memory():
    d = _draft("acc-matmul-bf16-sum-2-blocks")
    (acc,) = _kinds(d)["nki.low-precision-accumulator"]
    assert (acc.labels["role"], acc.metrics["accumulation_steps"], acc.severity.value) == ("partial_sums", 2, "low")
    (evicted,) = _kinds(d)["nki.psum-accumulate-not-inplace"]
    assert evicted.labels["accumulator"] == "sbuf"
    assert _scores(d, "precision", "numerical_correctness", "memory_hierarchy", "performance", "neuron_platform") == {
        "precision": 4, "numerical_correctness": 4, "memory_hierarchy": 3, "performance": 3, "neuron_platform": 3}


def test_sixty_four_partition_tiles_cost_tiling_data_movement_and_performance():
    d = _draft("acc-mul-64-partitions")
    assert {f.metrics["partitions"] for f in _kinds(d)["nki.underused-partitions"]} == {64}
    assert _scores(d, "tiling", "data_movement", "performance") == {"tiling": 3, "data_movement": 4, "performance": 3}


@pytest.mark.parametrize(("item", "pattern", "scores"), [
    ("acc-port-relu-2d-blocks", "spmd_instance_per_block",
     {"migration_fidelity": 3, "tiling": 1, "data_movement": 1, "performance": 1, "neuron_platform": 3}),
    ("acc-port-rowmax-grid-stride", "loop",
     {"migration_fidelity": 3, "tiling": 1, "data_movement": 1, "performance": 1, "neuron_platform": 3}),
])
def test_thread_emulation_forms_make_a_surface_port_confirmed_by_the_trace(item, pattern, scores):
    d = _draft(item)
    (f,) = _kinds(d)["nki.thread-emulation"]
    assert f.labels["pattern"] == pattern and f.labels["trace"] == "confirmed"
    (verdict,) = _kinds(d)["migration.thread_indexing"]
    assert verdict.labels["verdict"] == "thread_emulation"
    assert _scores(d, *scores) == scores
    assert f.id in {c.evidence_id for c in d.criterion("migration_fidelity").citations}


def test_one_partition_per_cuda_thread_with_its_column_loop_is_a_surface_port():
    d = _draft("acc-port-matvec-thread-per-partition")
    (f,) = _kinds(d)["nki.per-element-loop"]
    assert f.labels["trace"] == "confirmed" and f.metrics["trip_count"] == 256
    (use,) = _kinds(d)["sim.partition_use"]
    assert use.metrics["free_elements_mean"] < 2
    # data_movement 4, gold 5: the per-tile [128, 1] result store is the "one avoidable small transfer
    # pattern" the audit set's gold (rowmax-base) and rowsum-base's batched store call level 4; the
    # gold of this item is inconsistent with them and left to the lead.
    assert _scores(d, "migration_fidelity", "tiling", "performance", "data_movement", "neuron_platform") == {
        "migration_fidelity": 3, "tiling": 1, "performance": 1, "data_movement": 4, "neuron_platform": 3}


def test_a_faithful_port_with_a_remainder_strip_and_an_fp32_ones_matmul_is_not_penalised():
    d = _draft("acc-port-colmean-remainder")
    assert not {"nki.underused-partitions", "nki.fp32-matmul-operands", "nki.thread-emulation"} & set(_kinds(d))
    assert _scores(d, "migration_fidelity", "tiling", "precision", "data_movement", "neuron_platform") == {
        "migration_fidelity": 5, "tiling": 5, "precision": 5, "data_movement": 5, "neuron_platform": 5}


def test_host_imports_at_module_level_do_not_block_the_simulation(tmp_path):
    """torch/scipy imported for the file's own __main__ check: stand-ins while loading, an info item naming them."""
    item = tmp_path / "host-imports"
    shutil.copytree(SET / "acc-multikernel-l2norm", item)
    (item / "gold.toml").unlink()
    src = (item / "kernel.py").read_text().replace("import numpy as np\n", "import numpy as np\nimport torch\nfrom scipy import special\n", 1)
    (item / "kernel.py").write_text(src.replace('print("max abs error", np.abs(got - want).max())',
                                                'print(torch.tensor(got - want).abs().max(), special.erf(0.5))'))
    d = drafted(str(item))
    kinds = _kinds(d)
    (stand_in,) = kinds["security.stand_in"]
    assert "scipy" in stand_in.title and "torch" in stand_in.title
    assert kinds["sim.output"][0].metrics["matches"] == 1.0
    assert _scores(d, "kernel_correctness", "numerical_correctness") == {"kernel_correctness": 5, "numerical_correctness": 5}


CORRECT = ["acc-multikernel-l2norm", "acc-flag-params", "acc-broadcast-bias", "acc-port-colmean-remainder",
           "softmax-base", "rmsnorm-base", "layernorm-base", "matmul-tiled-base", "attention-base", "transpose-base"]


@pytest.mark.parametrize("item", [*CORRECT, "examples/matmul-tiled"])
def test_high_scores_of_a_correct_kernel_cite_the_positive_evidence_that_earns_them(item):
    d = drafted(str(ROOT / item)) if item.startswith("examples/") else _draft(item)
    bundle_kinds = {i.id: i.kind for i in d.evidence.items}
    for c in d.criteria:
        if c.status != "scored" or c.score < 4:
            continue
        assert "Why it is this high:" in c.rationale, (c.criterion_id, c.rationale)
        cited = {bundle_kinds.get(x.evidence_id) for x in c.citations}
        assert cited - {"sim.trace", "nki.kernel", None}, (c.criterion_id, cited)
