"""`grader evaluate --format html`: the draft page as one self-contained file."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from grader.cli import app as cli
from grader.web.assets import csp_hash
from tests.conftest import EXAMPLES


def test_html_report_is_one_self_contained_file(tmp_path):
    out = tmp_path / "draft.html"
    result = CliRunner().invoke(cli, ["evaluate", str(EXAMPLES / "rmsnorm-cuda-port"), "--format", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert html.startswith("<!doctype html>") and "<link rel=\"stylesheet\"" not in html and "<script" not in html
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing is fetched from anywhere
    # The strict CSP allows exactly the embedded stylesheet, by its hash.
    style = re.search(r"<style>(.*?)</style>", html, re.S).group(1)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1).replace("&#39;", "'")
    assert f"style-src {csp_hash(style)};" in csp and "default-src 'none'" in csp
    assert 'id="cite-benchmarking-1"' in html and '<h3 id="src-' in html and "kernel.cu" in html
    assert "Draft — not final until a reviewer signs off." in html and "Sign off" not in html
