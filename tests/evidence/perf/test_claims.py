"""Claims evidence: each claim as a fact, each methodology gap and impossible figure as a finding."""

from __future__ import annotations

import pytest

from evidence.perf.claims import ClaimsFormatError, parse_claims
from evidence.perf.claims_collector import ClaimsCollector
from evidence.submission import Manifest, Submission

SOUND_METHOD = """
[method]
source = "measured"
timer = "device"
warmup = 20
iterations = 200
variance_reported = true
correctness_checked = true
compile_excluded = true
device = "trn2.48xlarge, one NeuronCore"
"""


def collect(claims: str, target: str = "trn2", notes: str | None = None, rtol: float | None = None,
            dtype: str = "float32"):
    data = {"task": {"id": "t", "title": "T", "target": target, "rtol": rtol},
            "kernel": {"file": "k.py", "entry": "k"}, "claims": {"file": "claims.toml"},
            "inputs": [{"name": "x", "shape": [128, 128], "dtype": dtype}]}
    files = {"k.py": "def k():\n    pass\n", "claims.toml": claims}
    if notes is not None:
        data["notes"] = {"file": "NOTES.md"}
        files["NOTES.md"] = notes
    return ClaimsCollector().collect(Submission(manifest=Manifest.model_validate(data), files=files))


def codes(items):
    return sorted(i.labels["code"] for i in items if i.kind == "claims.methodology")


def test_sound_claim_has_no_gaps():
    items = collect(SOUND_METHOD + '[[claim]]\nid = "lat"\nmetric = "latency_us"\nvalue = 412.0\n')
    assert [i.kind for i in items] == ["claims.claim"]
    assert items[0].metrics["value"] == 412.0 and items[0].location.start_line == 12  # the id line


def test_methodology_gaps_are_each_named():
    items = collect('[[claim]]\nid = "s"\nmetric = "speedup"\nvalue = 2.0\ndtype = "bfloat16"\nbaseline_dtype = "float32"\n'
                    '[claim.method]\ntimer = "host"\n')
    assert codes(items) == ["compile_not_excluded", "correctness_unchecked", "few_iterations",
                            "host_timer_unsynchronized", "no_baseline", "no_variance", "no_warmup", "precision_parity",
                            "source_unstated"]


@pytest.mark.parametrize(
    ("claim", "code"),
    [
        ('metric = "tflops"\nvalue = 1400.0', "exceeds_peak_flops"),  # above trn2's chip-level dense fp8 peak
        ('metric = "tflops"\nvalue = 200.0', "exceeds_peak_flops"),  # above one NeuronCore's 158 TFLOPS
        ('metric = "gbps"\nvalue = 900.0', "exceeds_hbm_bandwidth"),
        ('metric = "latency_us"\nvalue = 0.04', "below_dma_fixed_cost"),
    ],
)
def test_physically_impossible_claims(claim, code):
    items = collect(SOUND_METHOD + f'[[claim]]\nid = "c"\n{claim}\n')
    assert codes(items) == [code]
    assert next(i for i in items if i.kind == "claims.methodology").severity.value == "high"


def test_chip_level_bounds_when_the_device_is_a_whole_chip():
    method = SOUND_METHOD.replace("trn2.48xlarge, one NeuronCore", "trn2 chip, 8 cores")
    assert codes(collect(method + '[[claim]]\nid = "c"\nmetric = "tflops"\nvalue = 600.0\n')) == []
    assert codes(collect(method.replace('"trn2 chip', '"trn1 chip') + '[[claim]]\nid = "c"\nmetric = "tflops"\nvalue = 600.0\n',
                         target="trn1")) == ["exceeds_peak_flops"]


def test_cpu_figures_labelled_measured_are_flagged():
    method = SOUND_METHOD.replace("trn2.48xlarge, one NeuronCore", "CPU simulator (nki.simulate_kernel)")
    assert codes(collect(method + '[[claim]]\nid = "c"\nmetric = "latency_us"\nvalue = 500.0\n')) == ["measured_off_device"]


def test_malformed_claims_file_is_one_line():
    with pytest.raises(ClaimsFormatError, match=r"^claims.toml: claim\[0\].metric: Input should be"):
        parse_claims('[[claim]]\nid = "c"\nmetric = "speed"\nvalue = 1\n', "claims.toml")


TWO_CLAIMS = """
[method]
source = "measured"
timer = "device"
warmup = 20
iterations = 200
correctness_checked = true
device = "trn2.48xlarge"

[[claim]]
id = "a"
metric = "latency_us"
value = 400.0

[[claim]]
id = "b"
metric = "latency_us"
value = 800.0
"""


def test_a_gap_of_the_whole_file_counts_once():
    items = [i for i in collect(TWO_CLAIMS) if i.kind == "claims.methodology"]
    assert codes(items) == ["compile_not_excluded", "no_variance"]  # once each, not once per claim
    assert all(i.labels["scope"] == "file" and i.labels["claim"] == "a,b" for i in items)
    assert items[0].location.start_line == 2  # the [method] table


def test_a_claims_own_override_is_its_own_gap():
    text = TWO_CLAIMS.replace('value = 800.0', 'value = 800.0\n[claim.method]\ntimer = "host"')
    items = [i for i in collect(text) if i.kind == "claims.methodology" and i.labels["scope"] == "claim"]
    assert [(i.labels["claim"], i.labels["code"], i.severity.value) for i in items] == [
        ("b", "host_timer_unsynchronized", "critical")]  # the rubric's level-1 example


def test_notes_admissions_are_cited_and_measured_labels_they_contradict_are_critical():
    notes = ("# Notes\n\nWe had no access to a Trainium instance, so the latencies come from the NKI cost model.\n"
             "The baseline ran in fp32 on the same shapes.\n")
    items = collect(TWO_CLAIMS, notes=notes, dtype="bfloat16")
    notes_items = {(i.labels["code"], i.location.start_line) for i in items if i.kind == "claims.note"}
    assert notes_items == {("no_hardware", 3), ("model_figures", 3), ("baseline_precision", 4)}
    presented = [i for i in items if i.labels.get("code") == "presented_as_measured"]
    assert len(presented) == 1 and presented[0].severity.value == "critical"
    assert presented[0].location.file == "NOTES.md" and presented[0].location.start_line == 3
    # the notes give the baseline's precision: a bf16 kernel against it, with no stated tolerance
    parity = [i for i in items if i.labels.get("code") == "precision_parity"]
    assert {i.labels["claim"] for i in parity} == {"a", "b"}


def test_precision_parity_needs_no_stated_tolerance_and_shapes_must_match():
    claim = '[[claim]]\nid = "s"\nmetric = "speedup"\nvalue = 2.0\nbaseline = "torch"\nbaseline_dtype = "float32"\n'
    assert "precision_parity" in codes(collect(SOUND_METHOD + claim, dtype="bfloat16"))
    stated = codes(collect(SOUND_METHOD + claim, dtype="bfloat16", rtol=2e-2))
    assert "precision_parity" not in stated and "config_mismatch" in stated
    shapes = claim + 'shapes = "x[4096, 768]"\nbaseline_shapes = "x[1024, 768]"\n'
    assert "shape_parity" in codes(collect(SOUND_METHOD + shapes, dtype="float32"))


def test_free_text_of_the_claims_file_counts_too():
    text = SOUND_METHOD.replace('device = "trn2.48xlarge, one NeuronCore"', 'device = "none: estimated latency from the roofline"')
    items = collect(text + '[[claim]]\nid = "c"\nmetric = "latency_us"\nvalue = 50.0\n')
    assert any(i.kind == "claims.note" and i.labels["code"] == "model_figures" for i in items)
