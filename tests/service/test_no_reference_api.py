"""Over HTTP, a submission without a reference comes back with the criteria the simulation would have
informed flagged `unobserved` and their rationales saying they were judged on the source alone (the kernel
is never simulated without something to compare it with). Kernel written for this test."""

from __future__ import annotations

from tests.grader.scale_rows import manifest

MANIFEST = manifest(rows=256, reference=False)
KERNEL = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scale_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(x.shape[0] // 128):
        tile = nl.load(x[t * 128:(t + 1) * 128, :])
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.multiply(tile, 2.0))
    return out
'''


def test_a_submission_without_a_reference_is_flagged_unobserved_in_the_api_output(client, callers, worker):
    r = client.post("/v1/evaluations?wait=90", json={"manifest": MANIFEST, "files": {"kernel.py": KERNEL}},
                    headers=callers["submitter"].headers)
    assert r.status_code == 200, r.text
    criteria = {c["criterion_id"]: c for c in r.json()["draft"]["criteria"]}
    for cid in ("tiling", "memory_hierarchy", "data_movement", "precision", "neuron_platform", "performance"):
        c = criteria[cid]
        assert "unobserved" in {f["code"] for f in c["flags"]}, (cid, c["flags"])
        assert "Judged on the source alone" in c["rationale"] and "never simulated" in c["rationale"], cid
    assert criteria["kernel_correctness"]["status"] == "not_applicable"
