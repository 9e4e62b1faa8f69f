"""The reviewer's workbench in a real browser (Debian's Chromium through Playwright), end to end:
sign in, open the queue and a draft, follow a citation to its highlighted line, edit a score with a
reason, acknowledge a flag, sign off, find the entries in the audit log; submitted `<script>` stays
text; keyboard focus is visible; the standalone report works from a file with nothing fetched.

The draft comes from the real pipeline: evidence from the simulator and analyzers, and a model
(the loopback fake OpenAI server) whose score breaks the rubric's cap, so the guard flags it."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from grader.api.app import create_app
from grader.cli import app as cli
from grader.service import evaluations
from grader.service.worker import Worker
from grader.settings import Settings
from grader.store import migrate
from grader.store.db import Store, sqlite_url
from grader.store.keys import create_key
from tests.conftest import EXAMPLES
from tests.fakes.openai_server import FakeOpenAIServer, verdict
from tests.web.browser import LiveServer, PageWatch, chromium, chromium_path
from tests.web.conftest import example_upload

pytestmark = [pytest.mark.slow, pytest.mark.skipif(chromium_path() is None, reason="no chromium (apt-get install chromium)")]

SCRIPT = "<script>window.__pwned = 1</script>"
EVIDENCE_LINE = re.compile(r"^\[([^\]\s]+)\] \S+ \| severity", re.M)


def model_says_3(body: dict) -> object:
    """Every criterion 3, citing the first listed item; the rationale tries to inject a script."""
    prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
    first = EVIDENCE_LINE.findall(prompt)[0]
    return verdict(3, first, rationale=f"Judged from {first}. {SCRIPT}")


def inject(files: dict[str, str]) -> None:
    files["kernel.py"] = files["kernel.py"].replace('"""Row softmax', f'"""Row softmax {SCRIPT}', 1)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A live server with one finished LLM-drafted evaluation, and a reviewer's and a lead's keys."""
    tmp = tmp_path_factory.mktemp("browser")
    with pytest.MonkeyPatch.context() as mp, FakeOpenAIServer(default=model_says_3) as model:
        mp.setenv("OPENAI_API_KEY", "sk-loopback")
        store = Store(sqlite_url(tmp / "grader.db"))
        migrate.upgrade(store)
        settings = Settings(data_dir=tmp / "data", drafter="llm", model="openai/fake-judge", api_base=model.base_url,
                            use_cache=False)
        submitter, _ = create_key(store, name="sam", role="submitter")
        _, reviewer = create_key(store, name="rita", role="reviewer")
        _, lead = create_key(store, name="lee", role="lead")
        from grader.store.keys import Principal

        manifest, files = example_upload("softmax-ragged-defect", inject)
        view, _ = evaluations.submit(store, settings, Principal(submitter.id, "sam", "submitter"), manifest, files)
        Worker(store, settings, poll_s=0.01).run(max_jobs=1)
        with LiveServer(create_app(settings, store)) as server:
            yield server, view.id, {"reviewer": reviewer, "lead": lead}
        store.dispose()


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


def sign_in(page, base: str, token: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(base + "/")
    assert "/ui/login" in page.url
    page.get_by_label("API key").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/ui/queue$"))


def test_review_to_sign_off_in_the_browser(served, browser):
    server, eid, tokens = served
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    watch = PageWatch(page, (server.url,))
    sign_in(page, server.url, tokens["reviewer"])

    # The queue lists the draft; open it.
    row = page.get_by_role("row").filter(has_text="softmax-rows")
    assert "needs review" in row.inner_text()
    row.get_by_role("link").click()
    page.wait_for_url(re.compile(f"/ui/evaluations/{eid}$"))
    assert page.get_by_role("heading", name="Draft evaluation: softmax-rows").is_visible()
    correctness = page.locator("#crit-kernel_correctness")
    assert "Flag contradicts_evidence:" in correctness.inner_text()
    assert SCRIPT in correctness.inner_text()  # the model's "script" is text on the page
    assert page.evaluate("window.__pwned") is None

    # Follow a citation to its highlighted line, beside the evidence item it names.
    citation = correctness.locator("ol.citations a").first
    cited = citation.inner_text()  # e.g. kernel.py:7
    citation.click()
    page.wait_for_url(re.compile(r"/source/kernel\.py\?lines="))
    line = int(cited.split(":")[1].split("-")[0])
    marked = page.locator(f"#kernel-py-L-{line} + .hll")
    assert marked.count() == 1 and marked.is_visible()
    assert page.get_by_role("complementary", name="Evidence").locator(".card").is_visible()
    assert SCRIPT in page.locator(".source").inner_text() and page.evaluate("window.__pwned") is None
    page.go_back()

    # Edit a score: the reason is mandatory (the browser enforces it before the server does).
    tiling = page.locator("#crit-tiling")
    tiling.get_by_text("Change the score…").click()
    tiling.get_by_label("New score").select_option("2")
    tiling.get_by_role("button", name="Save new score").click()
    assert "saved" not in page.url and tiling.get_by_label("Reason").evaluate("el => el.validity.valueMissing")
    tiling.get_by_label("Reason").fill(f"the last 44 rows are never written {SCRIPT}")
    tiling.get_by_role("button", name="Save new score").click()
    page.wait_for_url(re.compile(r"\?saved=tiling"))
    assert page.get_by_role("status").filter(has_text="Saved your decision on tiling").is_visible()
    assert "2 / 5" in page.locator("#crit-tiling header .score").inner_text()

    # Sign-off is refused while the flag is unacknowledged; acknowledge it, then sign off.
    page.get_by_role("button", name="Sign off").click()
    alert = page.locator("#sign-off-error")
    assert "acknowledgement" in alert.inner_text() and "kernel_correctness" in alert.inner_text()
    pending = page.locator("#pending li a").all_inner_texts()
    assert "Kernel correctness" in pending
    for title in pending:  # every criterion the model's 3 contradicts, as the banner lists them
        page.locator("#pending").get_by_role("link", name=title).click()
        box = page.locator(":target")
        box.get_by_label("Acknowledge the flag").fill(f"checked {title} against the simulator findings")
        box.get_by_role("button", name=re.compile("Acknowledge and accept")).click()
        page.wait_for_url(re.compile(r"\?saved="))
    assert page.locator("#pending").count() == 0
    page.get_by_label("Comment").fill("reviewed against the simulator findings")
    page.get_by_role("button", name="Sign off").click()
    page.wait_for_url(re.compile(r"\?signed=1"))
    assert page.get_by_role("status").filter(has_text="Signed off by rita").is_visible()
    assert page.locator("form[action$='/reviews']").count() == 0
    assert page.evaluate("window.__pwned") is None

    # The lead finds the three decisions in the audit log, and the chain verifies.
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, server.url, tokens["lead"])
    page.get_by_role("link", name="Audit log").click()
    page.get_by_label("Subject").fill(f"job:{eid}")
    page.get_by_role("button", name="Filter").click()
    actions = page.locator("tbody td:nth-child(4)").all_inner_texts()
    assert actions[0] == "job.queued" and actions[-1] == "evaluation.signed_off", actions
    assert actions.count("review.edit") == 1 and actions.count("review.accept") == len(pending), actions
    page.get_by_role("link", name="Verify the chain").click()
    assert "Chain intact" in page.get_by_role("status").inner_text()
    assert not watch.problems, watch.problems


def test_keyboard_reaches_the_page_with_visible_focus(served, browser):
    server, eid, tokens = served
    page = browser.new_page()
    sign_in(page, server.url, tokens["reviewer"])
    page.goto(f"{server.url}/ui/evaluations/{eid}")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.textContent")
    assert focused == "Skip to main content"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main"
    # Tab on to the first criterion link of the score table and follow it with the keyboard.
    for _ in range(60):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('href')") == "#crit-kernel_correctness":
            break
    else:
        pytest.fail("the score table's criterion link is not reachable by keyboard")
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"
    page.keyboard.press("Enter")
    assert page.url.endswith("#crit-kernel_correctness")


def test_standalone_report_opens_from_a_file(tmp_path, browser):
    folder = tmp_path / "injected"
    folder.mkdir()
    for p in (EXAMPLES / "matmul-tiled").iterdir():  # a matmul: its report has a roofline plot
        (folder / p.name).write_text(p.read_text())
    kernel = folder / "kernel.py"
    kernel.write_text(kernel.read_text().replace('"""Tiled bf16 matmul', f'"""Tiled bf16 matmul {SCRIPT}', 1))
    out = tmp_path / "draft.html"
    result = CliRunner().invoke(cli, ["evaluate", str(folder), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = browser.new_page()
    watch = PageWatch(page, (out.as_uri(),))
    page.goto(out.as_uri())
    assert page.get_by_role("heading", name="Draft evaluation: matmul-tiled-bf16").is_visible()
    link = page.locator("#crit-kernel_correctness ol.citations a").first
    target = link.get_attribute("href")
    link.click()
    panel = page.locator(target.replace(":", "\\:"))
    assert panel.is_visible() and panel.locator(".hll").count() >= 1 and panel.locator(".card").count() == 1
    assert SCRIPT in page.locator("#sources").locator("xpath=..").inner_text()
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("getComputedStyle(document.querySelector('.msg.warn')).borderLeftWidth") == "6px"  # CSS applied
    # The roofline plot decodes and is drawn under the report's CSP, with its description in words beside it.
    plot = page.get_by_role("img", name="Roofline plot of the cost model's estimate, described in words beside it.")
    plot.scroll_into_view_if_needed()
    assert plot.is_visible() and plot.evaluate("svg => svg.getBoundingClientRect().width > 300")
    assert "kernel:" in plot.text_content()
    words = page.locator("#performance-words").inner_text()
    assert "On the roofline the kernel sits at" in words and "Bottleneck:" in words and "What-if:" in words
    assert not watch.problems, watch.problems
