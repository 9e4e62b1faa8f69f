"""Code nested deeper than the parsers take, found before libcst sees it.

Generated kernels chain expressions thousands deep (`a + a + ... + a`, calls in calls). libcst's native
parser overflows its own stack on brackets nested a few hundred deep (the whole process dies, no exception)
and takes time quadratic in the depth of an operator chain (1,000 terms about a second, 2,000 about five);
CPython refuses more than 200 nested brackets and expressions nested about 3,000 deep. Code Python cannot
compile is not analysed: `nesting_error` says why in one line naming file:line, and the engine raises it.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize

MAX_BRACKETS = 200  # CPython's parser: "too many nested parentheses" beyond this
_BRACKETS = re.compile(r"[()\[\]{}]")


def nesting_error(source: str, file: str) -> str | None:
    """`file:line: why` when `source` nests deeper than Python compiles, else None (syntax errors of other
    kinds are left to the parser, which reports them itself)."""
    depth, line = _bracket_depth(source)
    if depth > MAX_BRACKETS:
        return (f"{file}:{line}: brackets nested {depth} deep, more than the {MAX_BRACKETS} Python compiles: "
                "not analysed")
    try:
        parsed(source)
    except RecursionError:
        return (f"{file}:{_longest_line(source)}: an expression nested deeper than Python compiles (about 3,000 "
                "levels): not analysed")
    except (SyntaxError, ValueError):
        pass
    return None


@functools.lru_cache(maxsize=4)
def parsed(source: str) -> ast.Module:
    """`ast.parse(source)`, kept for the few files analysed at once: the nesting check and the engine's
    positions (`positions.AstLines`) read the same tree instead of parsing each file twice. Read-only."""
    return ast.parse(source)


def _bracket_depth(source: str) -> tuple[int, int]:
    """(deepest bracket nesting, its line). Counting every bracket character (strings and comments too) can
    only overcount, so the tokenizer is asked only when that count passes the limit."""
    depth = peak = 0
    for ch in _BRACKETS.findall(source):
        depth += 1 if ch in "([{" else -1
        peak = max(peak, depth)
    if peak <= MAX_BRACKETS:
        return peak, 0
    depth = peak = line = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
                if depth > peak:
                    peak, line = depth, tok.start[0]
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth -= 1
    except (tokenize.TokenError, SyntaxError):  # unbalanced or untokenizable: the character count stands
        return max(peak, MAX_BRACKETS + 1), line or _longest_line(source)
    return peak, line


def _longest_line(source: str) -> int:
    lines = source.splitlines() or [""]
    return max(range(len(lines)), key=lambda i: len(lines[i])) + 1
