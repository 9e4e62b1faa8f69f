"""One significand table (evidence.nki.dtypes.significand_bits) behind claims, the kernel's candidate precision and
the corroboration's rounding test: the OCP fp8 of nki 0.3+ (float8_e4m3fn) is judged as the e4m3 it rounds like."""

from __future__ import annotations

import pytest

from evidence.nki.dtypes import significand_bits
from evidence.perf.claims_collector import ClaimsCollector, kernel_dtype
from evidence.submission import Manifest, Submission
from tests.evidence.perf.test_claims import SOUND_METHOD

METHOD = SOUND_METHOD + """
[[claim]]
id = "s"
metric = "speedup"
value = 2.0
baseline = "torch on the same device"
baseline_dtype = "bfloat16"
"""


def _submission(claim_dtype: str | None, input_dtypes=("float32",)) -> Submission:
    data = {"task": {"id": "t", "title": "T", "target": "trn2"},
            "kernel": {"file": "k.py", "entry": "k"}, "claims": {"file": "claims.toml"},
            "inputs": [{"name": f"x{i}", "shape": [128, 128], "dtype": d} for i, d in enumerate(input_dtypes)]}
    claims = METHOD + (f'dtype = "{claim_dtype}"\n' if claim_dtype else "")
    return Submission(manifest=Manifest.model_validate(data), files={"k.py": "def k():\n    pass\n",
                                                                     "claims.toml": claims})


def _gaps(sub: Submission) -> list[str]:
    return sorted(i.labels["code"] for i in ClaimsCollector().collect(sub) if i.kind == "claims.methodology")


@pytest.mark.parametrize("stated", ["float8_e4m3fn", "fp8_e4m3fn", "FP8"])
def test_an_e4m3fn_claim_gives_up_precision_against_a_bf16_baseline_as_e4m3_does(stated):
    assert _gaps(_submission("float8_e4m3")) == ["precision_parity"]
    assert _gaps(_submission(stated)) == ["precision_parity"]  # was config_mismatch: e4m3fn read as 24 bits


def test_the_kernels_candidate_precision_is_its_narrowest_input_dtype_e4m3fn_included():
    assert kernel_dtype(_submission(None, ("bfloat16", "float8_e4m3fn", "int32"))) == "float8_e4m3fn"
    assert _gaps(_submission(None, ("float8_e4m3fn",))) == ["precision_parity"]


def test_significand_bits_come_from_finfo_and_keep_the_claims_aliases():
    assert [significand_bits(n) for n in ("fp32", "tf32", "bf16", "fp16", "fp8", "float8_e5m2")] == [24, 11, 8, 11, 4, 3]
    assert [significand_bits(n) for n in ("float8_e4m3fn", "float8_e5m2fnuz", "float8_e8m0fnu")] == [4, 3, 1]
    assert [significand_bits(n) for n in ("int8", "float8_e4m3fn_x4", "not_a_dtype", None)] == [None] * 4


def test_the_rounding_test_judges_an_e4m3fn_output_by_its_own_bits():
    from evidence.corroborate import _measured
    from evidence.model import EvidenceItem, Severity

    def out(dtype: str, rel: float) -> EvidenceItem:
        return EvidenceItem(id="sim.output:0", kind="sim.output", analyzer="t", severity=Severity.info, title="o",
                            metrics={"rel_l2": rel}, labels={"dtype": dtype})

    # 2**-5 is within e4m3's half unit roundoff; 0.2 is above it
    assert _measured([out("float8_e4m3fn", 0.03)])[0] == _measured([out("float8_e4m3", 0.03)])[0] == "not_shown"
    assert _measured([out("float8_e4m3fn", 0.2)])[0] == "shown"
