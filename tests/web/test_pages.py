"""The reviewer pages over HTTP (TestClient): sign-in and sessions, CSRF, roles, the draft page, the
review and sign-off forms going through the service's rules, and the audit-log entries they leave."""

from __future__ import annotations

import json
import re

from grader.store import audit_log
from grader.store.keys import revoke_key
from tests.web.conftest import csrf


def test_sign_in_sets_a_strict_session_cookie_and_wrong_keys_are_refused(web):
    c = web.client()
    assert c.get("/ui/queue").headers["location"] == "/ui/login?next=/ui/queue"
    page = c.get("/ui/login?next=/ui/audit-log")
    token = csrf(page.text)
    wrong = c.post("/ui/login", data={"token": "nkig_not-a-key", "csrf": token, "next": "/ui/audit-log"})
    assert wrong.status_code == 401 and "not valid" in wrong.text
    ok = c.post("/ui/login", data={"token": web.keys["lead"][1], "csrf": token, "next": "/ui/audit-log"})
    assert ok.status_code == 303 and ok.headers["location"] == "/ui/audit-log"
    cookie = ok.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and web.keys["lead"][1] not in cookie
    assert c.get("/ui/audit-log").status_code == 200
    assert csrf(c.get("/ui/queue").text) != token  # a new CSRF token at sign-in


def test_sign_in_never_redirects_off_site(web):
    c = web.client()
    token = csrf(c.get("/ui/login").text)
    for target in ("https://evil.example/", "//evil.example/ui/", "/v1/keys"):
        r = c.post("/ui/login", data={"token": web.keys["reviewer"][1], "csrf": token, "next": target})
        assert r.headers["location"] == "/ui/queue", target
        c = web.client()
        token = csrf(c.get("/ui/login").text)


def test_forms_need_the_csrf_token_and_same_origin(web):
    eid = web.submit()
    c = web.sign_in("reviewer")
    form = {"criterion_id": "tiling", "action": "accept"}
    missing = c.post(f"/ui/evaluations/{eid}/reviews", data=form)
    assert missing.status_code == 403 and "security token" in missing.text
    token = csrf(c.get(f"/ui/evaluations/{eid}").text)
    cross = c.post(f"/ui/evaluations/{eid}/reviews", data=form | {"csrf": token}, headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403 and "Cross-site" in cross.text
    ok = c.post(f"/ui/evaluations/{eid}/reviews", data=form | {"csrf": token}, headers={"Origin": "http://testserver"})
    assert ok.status_code == 303
    with web.store.read() as s:
        assert [e.action for e in audit_log.page(s, subject=f"job:{eid}")][-1] == "review.accept"


def test_revoking_a_key_ends_its_sessions(web):
    c = web.sign_in("reviewer")
    assert c.get("/ui/queue").status_code == 200
    revoke_key(web.store, "reviewer")
    r = c.get("/ui/queue")
    assert r.status_code == 303 and r.headers["location"].startswith("/ui/login")
    assert "revoked" in c.get(r.headers["location"]).text


def test_sign_out(web):
    c = web.sign_in("reviewer")
    token = csrf(c.get("/ui/queue").text)
    assert c.post("/ui/logout", data={"csrf": token}).headers["location"] == "/ui/login"
    assert c.get("/ui/queue").status_code == 303


def test_pages_carry_a_strict_csp_and_no_inline_script_or_style(web):
    eid = web.submit()
    c = web.sign_in("admin")
    for path in ("/ui/queue", f"/ui/evaluations/{eid}", f"/ui/evaluations/{eid}/source/kernel.py?lines=13-19",
                 "/ui/audit-log", "/ui/login", "/ui/no-such-page"):
        r = c.get(path)
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp and "script-src" not in csp, path
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["cache-control"] == "no-store"
        assert "<script" not in r.text.lower() and " style=" not in r.text, path
    css = c.get("/ui/static/web.css")
    assert css.headers["content-type"].startswith("text/css") and ".source .hll" in css.text


def test_queue_filters_and_submitters_see_their_own(web):
    mine = web.submit(by="submitter")
    other = web.submit("matmul-tiled", by="admin")
    reviewer = web.sign_in("reviewer")
    page = reviewer.get("/ui/queue").text
    assert mine[:12] in page and other[:12] in page
    page = reviewer.get("/ui/queue?task=matmul-tiled-bf16").text
    assert other[:12] in page and mine[:12] not in page and "1 evaluation;" in page
    assert "0 evaluations" in reviewer.get("/ui/queue?state=signed_off").text
    bad = reviewer.get("/ui/queue?state=bogus")
    assert bad.status_code == 422 and "unknown state" in bad.text
    submitter = web.sign_in("submitter")
    page = submitter.get("/ui/queue").text
    assert mine[:12] in page and other[:12] not in page
    assert submitter.get(f"/ui/evaluations/{other}").status_code == 404


def test_draft_page_shows_criteria_citations_evidence_and_findings(web):
    eid = web.submit()
    html = web.sign_in("reviewer").get(f"/ui/evaluations/{eid}").text
    assert "Draft evaluation: softmax-rows" in html and "Draft — not final" in html
    assert 'id="crit-kernel_correctness"' in html and "2 / 5" in html
    # Each citation opens the cited lines beside the evidence item; bracketed ids in rationales link too.
    assert f'href="/ui/evaluations/{eid}/source/kernel.py?lines=13-13&amp;evidence=nki.ragged-without-mask%3Akernel.py%3A13#kernel-py-L-13"' in html
    assert '[<a href="/ui/evaluations/' in html
    assert '<h3 id="group-nki-static"' in html and '<h3 id="group-nki-simulator"' in html
    assert 'id="ev:sim.finding:output_not_fully_written:kernel.py:10"' in html
    assert "output_not_fully_written" in html.split('id="simulator"')[1].split('id="numerics"')[0]
    assert "rel. L2" in html and "0.003812" in html  # the numerics summary
    assert html.count('name="action" value="edit"') == 10  # a review form per criterion


def test_draft_page_shows_the_roofline_plot_and_the_estimate_in_words(web):
    eid = web.submit("matmul-tiled")
    r = web.sign_in("reviewer").get(f"/ui/evaluations/{eid}")
    perf = r.text.split('id="performance"')[1].split('id="evidence"')[0]
    # The cost model's SVG inlined (presentation attributes only: the CSP forbids style), described by the words.
    svg = re.search(r'<svg [^>]*class="roofline"[^>]*>.*?</svg>', perf, re.S)
    assert svg and 'aria-describedby="performance-words"' in svg.group(0) and "kernel: " in svg.group(0)
    words = perf.split('id="performance-words"')[1].split("</ul>")[0]
    assert "Estimated " in words and "On the roofline the kernel sits at " in words and "memory-bound" in words
    assert "Bottleneck: " in words and words.count("What-if: ") >= 1
    assert "<script" not in r.text.lower() and " style=" not in r.text


def test_source_page_highlights_the_cited_lines_beside_the_item(web):
    eid = web.submit()
    c = web.sign_in("submitter")
    r = c.get(f"/ui/evaluations/{eid}/source/kernel.py?lines=13-13&evidence=nki.ragged-without-mask:kernel.py:13")
    assert r.status_code == 200
    assert '<a id="kernel-py-L-13" name="kernel-py-L-13"></a><span class="hll">' in r.text
    assert r.text.count('class="hll"') == 1
    assert "the last 44 rows are never processed" in r.text and "Kernel correctness" in r.text  # item, cited by
    assert c.get(f"/ui/evaluations/{eid}/source/../../etc/passwd").status_code == 404
    assert c.get(f"/ui/evaluations/{eid}/source/kernel.py?lines=x").status_code == 422


def test_edit_needs_a_reason_and_lands_as_the_api_would(web):
    eid = web.submit()
    c = web.sign_in("reviewer")
    token = csrf(c.get(f"/ui/evaluations/{eid}").text)
    form = {"csrf": token, "criterion_id": "tiling", "action": "edit", "score": "2"}
    refused = c.post(f"/ui/evaluations/{eid}/reviews", data=form | {"reason": "  "})
    assert refused.status_code == 422 and "an edit needs a reason" in refused.text
    assert 'aria-invalid="true"' in refused.text and "<details class=\"box\" open>" in refused.text
    ok = c.post(f"/ui/evaluations/{eid}/reviews", data=form | {"reason": "last 44 rows never written"})
    assert ok.status_code == 303 and ok.headers["location"] == f"/ui/evaluations/{eid}?saved=tiling#crit-tiling"
    page = c.get(ok.headers["location"]).text
    assert "Saved your decision on tiling." in page and '<span class="was" title="drafted">3 / 5</span> 2 / 5' in page
    with web.store.read() as s:
        entry = audit_log.page(s, subject=f"job:{eid}")[-1]
    assert entry.action == "review.edit" and entry.actor == web.keys["reviewer"][0].id
    data = json.loads(entry.data)
    assert (data["criterion"], data["previous"], data["new"], data["reason"]) == (
        "tiling", {"status": "scored", "score": 3}, {"status": "scored", "score": 2}, "last 44 rows never written")


def test_page_and_api_reviews_leave_the_same_audit_entries(web):
    via_page, via_api = web.submit(), web.submit("softmax-ragged-defect", by="admin")
    c = web.sign_in("reviewer")
    token = csrf(c.get(f"/ui/evaluations/{via_page}").text)
    c.post(f"/ui/evaluations/{via_page}/reviews",
           data={"csrf": token, "criterion_id": "precision", "action": "edit", "score": "1", "reason": "bf16 stats"})
    c.post(f"/ui/evaluations/{via_page}/sign-off", data={"csrf": token, "comment": "done"})
    api = web.client()
    auth = {"Authorization": f"Bearer {web.keys['reviewer'][1]}"}
    api.post(f"/v1/evaluations/{via_api}/reviews", headers=auth, json={"decisions": [
        {"criterion_id": "precision", "action": "edit", "score": 1, "reason": "bf16 stats"}]})
    api.post(f"/v1/evaluations/{via_api}/sign-off", headers=auth, json={"comment": "done"})

    def trail(eid: str) -> list[tuple[str, str, dict]]:
        with web.store.read() as s:
            return [(e.actor, e.action, json.loads(e.data)) for e in audit_log.page(s, subject=f"job:{eid}")
                    if e.action.startswith(("review.", "evaluation."))]

    assert trail(via_page) == trail(via_api) and len(trail(via_page)) == 2


def test_flagged_criterion_needs_an_acknowledgement_before_sign_off(web):
    eid = web.submit(flag="contradicts_evidence")
    c = web.sign_in("reviewer")
    page = c.get(f"/ui/evaluations/{eid}").text
    assert "need an acknowledgement with a reason before sign-off" in page or "needs an acknowledgement" in page
    assert "Flag contradicts_evidence:" in page and "Acknowledge and accept" in page
    token = csrf(page)
    refused = c.post(f"/ui/evaluations/{eid}/sign-off", data={"csrf": token})
    assert refused.status_code == 409 and "kernel_correctness" in refused.text and 'role="alert"' in refused.text
    no_reason = c.post(f"/ui/evaluations/{eid}/reviews", data={"csrf": token, "criterion_id": "kernel_correctness",
                                                               "action": "accept", "reason": ""})
    assert no_reason.status_code == 422 and "acknowledge it with a reason" in no_reason.text
    ack = c.post(f"/ui/evaluations/{eid}/reviews", data={"csrf": token, "criterion_id": "kernel_correctness",
                                                         "action": "accept", "reason": "mismatch is the ragged tail"})
    assert ack.status_code == 303
    signed = c.post(f"/ui/evaluations/{eid}/sign-off", data={"csrf": token, "comment": "ok"})
    assert signed.status_code == 303
    final = c.get(signed.headers["location"]).text
    assert "Signed off</b> by reviewer" in final and 'action="/ui/evaluations/' not in final  # no more forms


def test_nobody_signs_off_their_own_submission(web):
    eid = web.submit(by="reviewer")
    c = web.sign_in("reviewer")
    token = csrf(c.get(f"/ui/evaluations/{eid}").text)
    r = c.post(f"/ui/evaluations/{eid}/sign-off", data={"csrf": token})
    assert r.status_code == 403 and "another reviewer must sign it off" in r.text


def test_submitted_text_is_escaped_everywhere(web):
    script = "<script>document.title='pwned'</script>"

    def inject(files: dict[str, str]) -> None:
        files["kernel.py"] = files["kernel.py"].replace('"""Row softmax', f'"""{script} Row softmax', 1) + f"\n# {script}\n"

    eid = web.submit(edit=inject)
    c = web.sign_in("reviewer")
    token = csrf(c.get(f"/ui/evaluations/{eid}").text)
    c.post(f"/ui/evaluations/{eid}/reviews", data={"csrf": token, "criterion_id": "tiling", "action": "edit",
                                                    "score": "2", "reason": script})
    for path in (f"/ui/evaluations/{eid}", f"/ui/evaluations/{eid}/source/kernel.py?lines=1-2"):
        html = c.get(path).text
        assert "<script" not in html and "&lt;script&gt;" in html, path
    lead = web.sign_in("lead").get("/ui/audit-log").text
    assert "<script" not in lead and "&lt;script&gt;" in lead


def test_pending_and_missing_evaluations(web):
    from grader.service import evaluations

    manifest, files = __import__("tests.web.conftest", fromlist=["example_upload"]).example_upload("matmul-tiled")
    view, _ = evaluations.submit(web.store, web.settings, web.keys["submitter"][0], manifest, files)
    c = web.sign_in("submitter")
    page = c.get(f"/ui/evaluations/{view.id}")
    assert page.status_code == 200 and "is <b>queued</b>" in page.text and 'http-equiv="refresh"' in page.text
    missing = c.get("/ui/evaluations/" + "0" * 32)
    assert missing.status_code == 404 and "no such evaluation" in missing.text


def test_queue_filters_by_flags_and_calibration_in_pages_and_api(web):
    flagged, plain = web.submit(flag="contradicts_evidence"), web.submit("matmul-tiled")
    c = web.sign_in("reviewer")
    page = c.get("/ui/queue?flag=contradicts_evidence").text
    assert flagged[:12] in page and plain[:12] not in page and "⚠&nbsp;</span>contradicts_evidence" in page
    page = c.get("/ui/queue?flag=none").text
    assert plain[:12] in page and flagged[:12] not in page
    assert "0 evaluations" in c.get("/ui/queue?calibrated=yes").text  # no calibration run exists
    assert "2 evaluations" in c.get("/ui/queue?calibrated=no").text
    assert c.get("/ui/queue?flag=Bad%20Flag").status_code == 422
    auth = {"Authorization": f"Bearer {web.keys['reviewer'][1]}"}
    listed = web.client().get("/v1/evaluations?flag=any", headers=auth).json()
    assert [e["id"] for e in listed["items"]] == [flagged]
    assert listed["items"][0]["flags"] == ["contradicts_evidence"] and listed["items"][0]["calibrated"] is False


def test_migration_0003_summarises_existing_drafts(tmp_path):
    from alembic import command
    from sqlalchemy import text

    from grader.store import migrate
    from grader.store.db import Store, sqlite_url

    store = Store(sqlite_url(tmp_path / "old.db"))
    command.upgrade(migrate._config(store), "0002")
    draft = {"criteria": [{"status": "scored", "flags": [{"code": "far_from_gold"}, {"code": "contradicts_evidence"}],
                           "consistency": {"calibrated": True}},
                          {"status": "scored", "flags": [], "consistency": {"calibrated": False}},
                          {"status": "not_applicable", "flags": [], "consistency": None}]}
    with store.engine.begin() as conn:
        conn.execute(text("INSERT INTO jobs (id, kind, state, params, submitted_by, attempts, max_attempts, created_at) "
                          "VALUES ('j1', 'evaluation', 'done', '{}', 'k', 1, 3, 0)"))
        conn.execute(text("INSERT INTO drafts (job_id, draft_json, epoch, model_calls, cost_usd, latency_s, created_at) "
                          "VALUES ('j1', :d, 'e', 0, 0, 1, 0)"), {"d": json.dumps(draft)})
    migrate.upgrade(store)
    with store.engine.connect() as conn:
        row = conn.execute(text("SELECT flag_codes, uncalibrated FROM drafts")).one()
    assert tuple(row) == (" contradicts_evidence far_from_gold ", 1)
    store.dispose()


def test_flags_and_verdicts_never_rely_on_colour_alone(web):
    eid = web.submit(flag="contradicts_evidence")
    html = web.sign_in("reviewer").get(f"/ui/evaluations/{eid}").text
    badges = re.findall(r'<span class="badge (\w+)">((?:<span aria-hidden="true">[^<]*</span>)?[^<]*)</span>', html)
    assert len(badges) > 10
    for colour, inner in badges:
        words = re.sub(r"<[^>]+>", "", inner).strip()
        assert re.search(r"[a-z]{3}", words), (colour, inner)  # a word, whatever the colour
    assert '<span aria-hidden="true">⚠&nbsp;</span>contradicts_evidence' in html  # the icon never wraps alone
