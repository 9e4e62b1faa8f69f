"""Perturbation transforms: what they change, what they must leave alone, and that they are deterministic."""

from __future__ import annotations

import ast

from grader.consistency.perturb import INJECTION_TEXT, comments, injection, perturb, rename, reorder
from grader.submission import load_submission
from tests.conftest import EXAMPLES

SOURCE = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

LIMIT = 128


@nki.jit
def kernel(x, scale=2):
    """Doc."""
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(rows // LIMIT):
        tile = nl.load(x[t * LIMIT:(t + 1) * LIMIT, :])
        nl.store(out[t * LIMIT:(t + 1) * LIMIT, :], value=helper(tile, factor=scale))
    return out


def helper(tile, factor):
    doubled = nl.multiply(tile, factor)
    return doubled
'''


def _names(src: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Name)}


def test_rename_changes_locals_only_and_keeps_the_program_shape():
    out = rename(SOURCE)
    names = _names(out)
    assert not {"rows", "cols", "out", "t", "doubled"} & names  # every local renamed
    assert "tile = " not in out and "value=helper(tile" not in out  # the kernel's local 'tile', not helper's parameter
    assert {"x", "scale", "factor", "tile", "LIMIT", "nl", "nki", "helper"} <= names  # parameters and globals stay
    assert "def kernel(x, scale=2):" in out and "def helper(tile, factor):" in out  # parameters keep their names
    assert "factor=scale" in out  # keyword arguments untouched
    assert ast.dump(ast.parse(out)).count("Name(") == ast.dump(ast.parse(SOURCE)).count("Name(")
    assert rename(SOURCE) == out  # deterministic


def test_reorder_reverses_top_level_functions():
    out = reorder(SOURCE)
    assert out.index("def helper") < out.index("def kernel") and out.index("LIMIT = 128") < out.index("def helper")
    assert reorder("def only():\n    return 1\n") is None  # one function: nothing to reorder


def test_comments_only_add_comments_and_blank_lines():
    out = comments(SOURCE)
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(SOURCE))
    assert out.count("\n") > 2 * SOURCE.count("\n") - 10


def test_injection_goes_into_the_entry_kernel():
    out = injection(SOURCE, "kernel")
    assert ast.dump(ast.parse(out)) == ast.dump(ast.parse(SOURCE))
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if INJECTION_TEXT in ln)
    assert lines[at - 1].startswith("def kernel") and lines[at].startswith("    # reviewer:")


def test_perturb_rewrites_only_the_kernel_file():
    sub = load_submission(EXAMPLES / "rmsnorm-cuda-port")
    variant = perturb(sub, "comments")
    kernel = sub.manifest.kernel.file
    assert variant.files[kernel] != sub.files[kernel]
    assert {k: v for k, v in variant.files.items() if k != kernel} == {k: v for k, v in sub.files.items() if k != kernel}
    assert variant.content_hash != sub.content_hash
    assert perturb(sub, "reorder") is None
