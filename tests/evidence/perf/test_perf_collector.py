"""The perf collector: estimate, roofline, bottleneck and what-if items; claims against the kernel."""

from __future__ import annotations

import textwrap

import pytest

from evidence.model import EvidenceBundle
from evidence.perf.claim_checks import claim_shapes
from evidence.perf.claims import parse_claims
from evidence.perf.collector import PerfCollector
from evidence.submission import Manifest, Submission
from tests.evidence.perf.conftest import write_profile

COPY = """
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def copy(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out

@nki.jit
def copy_small(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        for j in nl.affine_range(x.shape[1] // 32):
            t = nl.load(x[i * 128:(i + 1) * 128, j * 32:(j + 1) * 32])
            nl.store(out[i * 128:(i + 1) * 128, j * 32:(j + 1) * 32], value=t)
    return out
"""

METHOD = """
[method]
source = "measured"
timer = "device"
warmup = 20
iterations = 200
variance_reported = true
correctness_checked = true
compile_excluded = true
device = "trn1.2xlarge, one NeuronCore"
"""


def submission(claims: str | None = None, entry: str = "copy", shape=(4096, 4096), baseline: str | None = None,
               target: str = "trn1") -> Submission:
    data = {"task": {"id": "copy", "title": "Copy", "target": target}, "kernel": {"file": "kernel.py", "entry": entry},
            "inputs": [{"name": "x", "shape": list(shape), "dtype": "float32"}]}
    files = {"kernel.py": textwrap.dedent(COPY)}
    if claims is not None:
        data["claims"] = {"file": "claims.toml"}
        files["claims.toml"] = claims
    if baseline:
        data["baseline"] = {"file": "kernel.py", "entry": baseline}
    return Submission(manifest=Manifest.model_validate(data), files=files)


@pytest.fixture(scope="module")
def copy_items():
    return PerfCollector().collect(submission())


def test_estimate_roofline_bottleneck_and_whatifs(copy_items):
    kinds = [i.kind for i in copy_items]
    assert {"perf.estimate", "perf.roofline", "perf.bottleneck", "perf.whatif"} <= set(kinds)
    est = next(i for i in copy_items if i.kind == "perf.estimate")
    nbytes = 2 * 4096 * 4096 * 4
    assert est.labels["bottleneck"] == "dma" and est.labels["target"] == "trn1"
    assert est.metrics["time_s"] >= nbytes / 272e9  # the DMA roof
    assert 0.8 < est.metrics["roofline_efficiency"] <= 1.0  # 16 KiB per partition, loads and stores overlap
    roof = next(i for i in copy_items if i.kind == "perf.roofline")
    assert roof.labels["regime"] == "memory-bound" and roof.metrics["arithmetic_intensity"] == 0.0
    bott = next(i for i in copy_items if i.kind == "perf.bottleneck")
    assert bott.location.file == "kernel.py" and bott.location.start_line in (9, 10)
    assert est.location.start_line == 5  # the kernel function (its decorator line)


def test_small_transfers_get_a_batching_whatif_at_their_line():
    items = PerfCollector().collect(submission(entry="copy_small", shape=(1024, 1024)))
    wis = [i for i in items if i.kind == "perf.whatif" and i.labels["code"] == "small-dma"]
    assert wis and all(w.location.start_line in (18, 19) for w in wis)  # the load and the store
    top = max(wis, key=lambda w: w.metrics["speedup"])
    assert top.metrics["speedup"] > 2 and top.severity.value == "medium"  # 128 B per partition
    assert "->" in top.title and "kernel.py:" in top.title


def test_claims_impossible_far_and_sound():
    # 128 MiB through HBM: 20 us would be 6.7 TB/s on one core; 5 ms is 10x the model; 0.6 ms is plausible
    claims = METHOD + textwrap.dedent("""
        [[claim]]
        id = "impossible"
        metric = "latency_us"
        value = 20.0

        [[claim]]
        id = "far"
        metric = "latency_us"
        value = 5000.0

        [[claim]]
        id = "sound"
        metric = "latency_us"
        value = 600.0

        [[claim]]
        id = "bw"
        metric = "gbps"
        value = 201.0
    """)
    items = [i for i in PerfCollector().collect(submission(claims)) if i.kind == "perf.claim"]
    by_claim = {i.labels["claim"]: i for i in items}
    assert by_claim["impossible"].labels["code"] == "below_physical_bound"
    assert by_claim["impossible"].severity.value == "critical" and "GB/s" in by_claim["impossible"].title
    assert by_claim["far"].labels["code"] == "slower_than_model" and by_claim["far"].severity.value == "medium"
    assert by_claim["sound"].labels["code"] == "consistent_with_model" and by_claim["sound"].severity.value == "info"
    assert by_claim["bw"].labels["code"] == "consistent_with_model"  # 74% of the 272 GB/s per-core roof
    assert by_claim["far"].location.file == "claims.toml" and by_claim["far"].location.start_line > 1


def test_claims_at_their_own_shapes_and_speedups_against_the_baseline_kernel():
    claims = METHOD + textwrap.dedent("""
        [[claim]]
        id = "lat-small"
        metric = "latency_us"
        value = 40.0
        shapes = "x[1024, 1024]"

        [[claim]]
        id = "speedup-modest"
        metric = "speedup"
        value = 4.0
        baseline = "copy_small in the same file"

        [[claim]]
        id = "speedup-huge"
        metric = "speedup"
        value = 100.0
        baseline = "copy_small in the same file"
    """)
    sub = submission(claims, shape=(1024, 1024), baseline="copy_small")
    items = {i.labels["claim"]: i for i in PerfCollector().collect(sub) if i.kind == "perf.claim"}
    assert items["lat-small"].labels["shapes"] == "claim"
    assert items["speedup-huge"].labels["code"] == "speedup_far_from_model"
    assert items["speedup-modest"].labels["code"] == "consistent_with_model"
    assert items["speedup-modest"].metrics["predicted_speedup"] > 2


def test_claim_shapes_parse_only_the_kernels_inputs():
    sub = submission()
    claims = parse_claims('[[claim]]\nid = "a"\nmetric = "latency_us"\nvalue = 1.0\nshapes = "x[4096, 768]"\n'
                          '[[claim]]\nid = "b"\nmetric = "latency_us"\nvalue = 1.0\nshapes = "q[8, 8]"\n', "c.toml")
    assert claim_shapes(claims.claim[0], sub) == {"x": (4096, 768)}
    assert claim_shapes(claims.claim[1], sub) is None


def test_no_items_when_the_kernel_does_not_run():
    bad = submission()
    bad = bad.model_copy(update={"files": {"kernel.py": "import neuronxcc.nki as nki\n@nki.jit\ndef copy(x):\n    raise ValueError('no')\n"}})
    assert PerfCollector().collect(bad) == []


def test_a_trn3_task_without_a_profile_says_why_it_has_no_estimate():
    items = PerfCollector().collect(submission(target="trn3", shape=(256, 512)))
    assert [i.kind for i in items] == ["perf.unavailable"]
    assert "no hardware table for target 'trn3'" in items[0].detail and "GRADER_PERF_SPEC" in items[0].detail
    assert items[0].location is not None and items[0].location.file == "kernel.py"


def test_a_trn3_task_is_priced_on_the_profile_it_is_given(tmp_path):
    profile = write_profile(tmp_path, "trn3", dma_engine_gbps=33.0, hbm_gbps=587.0)
    items = PerfCollector(spec_override=str(profile)).collect(submission(target="trn3", shape=(256, 512)))
    est = next(i for i in items if i.kind == "perf.estimate")
    assert (est.labels["target"], est.labels["spec_version"]) == ("trn3", "lab-2026-11")


def test_perf_items_drive_the_performance_rules(copy_items):
    from grader.drafting.rules import draft_criterion
    from grader.rubric import load_rubric

    rubric = load_rubric("nki-kernel-review")
    bundle = EvidenceBundle(submission_hash="sha256:x", items=tuple(copy_items))
    crit = next(c for c in rubric.criteria if c.id == "performance")
    draft = draft_criterion(crit, submission(), bundle, rubric)
    assert draft.score == 5 and "near-roofline" not in draft.rationale  # the description, not the id, is shown
    assert "Estimated" in draft.rationale and "Bottleneck" in draft.rationale and "What-if" in draft.rationale
