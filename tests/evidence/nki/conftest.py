"""Helpers for simulator tests: run kernel source text and find marked lines."""

from __future__ import annotations

import textwrap

import pytest

from evidence.nki import load_kernel, simulate

HEADER = """\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.typing as nt
"""


def kernel_source(body: str) -> str:
    return HEADER + textwrap.dedent(body)


def marked_line(source: str, marker: str = "# <-") -> int:
    """1-based line of the (first) line carrying `marker`."""
    for i, line in enumerate(source.splitlines(), 1):
        if marker in line:
            return i
    raise AssertionError(f"no line marked {marker!r}")


def run_source(body: str, entry: str = "kernel", *args, **kwargs):
    src = kernel_source(body)
    mod = load_kernel(src, display="k.py")
    return simulate(getattr(mod, entry), *args, **kwargs), src


@pytest.fixture
def run():
    return run_source
