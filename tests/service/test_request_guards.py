"""Input no handler model can express is refused with a one-line 422 on both databases: a repeated
query parameter (which value counts would be a guess) and NUL characters (PostgreSQL cannot store them;
a 500 before), in the query, the path and JSON bodies, before anything is stored."""

from __future__ import annotations


def test_repeated_query_parameters_and_nul_characters_are_refused(client, callers):
    admin = callers["admin"].headers
    refusals = [
        (client.get("/v1/evaluations?state=done&state=needs_review", headers=admin),
         "query.state: given more than once; give it once"),
        (client.get("/v1/audit-log?subject=job:%00", headers=admin), "query.subject: contains a NUL (0x00) character"),
        (client.get("/v1/audits/a%00b", headers=admin), "path.audit_id: contains a NUL (0x00) character"),
        (client.post("/v1/keys", json={"name": "ops\x00", "role": "lead"}, headers=admin),
         "body.name: contains a NUL (0x00) character"),
        (client.post("/v1/audits", json={"set": "audit", "against": "run\x00"}, headers=admin),
         "body.against: contains a NUL (0x00) character"),
        (client.post("/v1/audits", json={"set": "audit", "perturbations": ["rename", "\x00"]}, headers=admin),
         "body.perturbations[1]: contains a NUL (0x00) character"),
    ]
    for response, detail in refusals:
        assert (response.status_code, response.json()["detail"]) == (422, detail)
    assert "ops\x00" not in [k["name"] for k in client.get("/v1/keys", headers=admin).json()]
    # A JSON string that spells \u0000 with an escaped backslash is text, not NUL: not refused.
    ok = client.post("/v1/keys", json={"name": "ops\\u0000", "role": "lead"}, headers=admin)
    assert ok.status_code == 201 and ok.json()["name"] == "ops\\u0000"
