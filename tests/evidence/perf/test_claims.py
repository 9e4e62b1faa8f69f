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


def collect(claims: str, target: str = "trn2"):
    manifest = Manifest.model_validate({"task": {"id": "t", "title": "T", "target": target},
                                        "kernel": {"file": "k.py", "entry": "k"}, "claims": {"file": "claims.toml"}})
    sub = Submission(manifest=manifest, files={"k.py": "def k():\n    pass\n", "claims.toml": claims})
    return ClaimsCollector().collect(sub)


def codes(items):
    return sorted(i.labels["code"] for i in items if i.kind == "claims.methodology")


def test_sound_claim_has_no_gaps():
    items = collect(SOUND_METHOD + '[[claim]]\nid = "lat"\nmetric = "latency_us"\nvalue = 412.0\n')
    assert [i.kind for i in items] == ["claims.claim"]
    assert items[0].metrics["value"] == 412.0 and items[0].location.start_line == 12  # the id line


def test_methodology_gaps_are_each_named():
    items = collect('[[claim]]\nid = "s"\nmetric = "speedup"\nvalue = 2.0\ndtype = "bfloat16"\nbaseline_dtype = "float32"\n'
                    '[claim.method]\ntimer = "host"\n')
    assert codes(items) == ["compile_not_excluded", "config_mismatch", "correctness_unchecked", "few_iterations",
                            "host_timer_unsynchronized", "no_baseline", "no_variance", "no_warmup", "source_unstated"]


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
