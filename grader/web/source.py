"""Submitted source as HTML: Pygments-highlighted, every line an anchor, cited lines marked.

Pygments escapes the text it highlights, so a kernel comment holding `<script>` renders as text;
its output is the only HTML built outside the autoescaping templates. Highlighting is cached by
content, because every page of one draft shows the same few files.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import CppLexer, PythonLexer, TextLexer, TOMLLexer

_LEXERS: dict[str, type[Lexer]] = {".py": PythonLexer, ".cu": CppLexer, ".cuh": CppLexer, ".cpp": CppLexer,
                                   ".h": CppLexer, ".toml": TOMLLexer}
_SLUG = re.compile(r"[^A-Za-z0-9_-]+")
CSS_CLASS = "source"


def file_slug(path: str) -> str:
    """A stable, readable anchor prefix for a file: `kernel.py` -> `kernel-py`."""
    return _SLUG.sub("-", path).strip("-") or "file"


def line_anchor(path: str, line: int) -> str:
    return f"{file_slug(path)}-L-{line}"


def known_lexers() -> set[type[Lexer]]:
    return {*_LEXERS.values(), TextLexer}


def lexer_for(path: str) -> Lexer:
    suffix = path[path.rfind("."):].lower() if "." in path else ""
    return _LEXERS.get(suffix, TextLexer)(stripnl=False, ensurenl=True)


@lru_cache(maxsize=256)
def _highlighted(path: str, text: str, marked: tuple[int, ...]) -> str:
    formatter = HtmlFormatter(linenos="inline", lineanchors=f"{file_slug(path)}-L",
                              hl_lines=list(marked), cssclass=CSS_CLASS, wrapcode=True)
    return highlight(text, lexer_for(path), formatter)


def highlight_file(path: str, text: str, marked: tuple[int, ...] = ()) -> Markup:
    """The whole file, line N anchored as `line_anchor(path, N)`, the `marked` lines highlighted."""
    return Markup(_highlighted(path, text, tuple(sorted(set(marked)))))


def span_lines(start: int | None, end: int | None, total: int) -> tuple[int, ...]:
    """The cited lines that exist in a file of `total` lines (a bad span from a model marks nothing)."""
    if start is None:
        return ()
    end = end if end is not None and end >= start else start
    return tuple(n for n in range(start, min(end, start + 400) + 1) if 1 <= n <= total)


@lru_cache(maxsize=1)
def pygments_css() -> str:
    return HtmlFormatter(style="default").get_style_defs(f".{CSS_CLASS}")


@lru_cache(maxsize=1024)
def _highlighted_excerpt(path: str, text: str, first: int, last: int, marked: tuple[int, ...], prefix: str) -> str:
    lines = text.splitlines(keepends=True)[first - 1:last]
    formatter = HtmlFormatter(linenos="inline", linenostart=first, lineanchors=prefix, hl_lines=[n - first + 1 for n in marked],
                              cssclass=f"{CSS_CLASS} excerpt", wrapcode=True)
    return highlight("".join(lines), lexer_for(path), formatter)


def highlight_excerpt(path: str, text: str, start: int, end: int | None, prefix: str, context: int = 5) -> Markup | None:
    """The cited lines with `context` lines around them, highlighted (for panels in one-file reports)."""
    total = text.count("\n") + (0 if text.endswith("\n") else 1)
    marked = span_lines(start, end, total)
    if not marked:
        return None
    first, last = max(1, marked[0] - context), min(total, marked[-1] + context)
    return Markup(_highlighted_excerpt(path, text, first, last, marked, prefix))
