"""The one stylesheet (our rules plus Pygments' token colours), its version and its CSP hash."""

from __future__ import annotations

import base64
import hashlib
from functools import cache

from grader.web.source import pygments_css
from grader.web.templating import static_text


@cache
def stylesheet() -> str:
    return static_text("web.css") + "\n/* Pygments token colours */\n" + pygments_css() + "\n"


@cache
def stylesheet_version() -> str:
    return hashlib.sha256(stylesheet().encode()).hexdigest()[:12]


def csp_hash(text: str) -> str:
    """The CSP source expression that allows exactly this inline <style> content."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# Served pages: no script at all, styles and images from the server or data: URIs (plots are inline SVG),
# forms post only to the server, and no page may be framed.
SERVED_CSP = ("default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
              "frame-ancestors 'none'; base-uri 'none'")


@cache
def standalone_csp() -> str:
    """One-file reports: only the embedded stylesheet and embedded images; nothing is fetched."""
    return f"default-src 'none'; style-src {csp_hash(stylesheet())}; img-src data:; form-action 'none'; base-uri 'none'"
