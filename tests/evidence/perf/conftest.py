"""Helpers for cost-model tests: trace small kernels written inline."""

from __future__ import annotations

import textwrap

from evidence.nki import load_kernel, simulate

HEADER = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.typing as nt
"""


def trace(body: str, *args, entry: str = "kernel", target: str = "trn1", **kw):
    """Simulate kernel source `body` in trace-only mode (arguments may be nt.tensor placeholders)."""
    mod = load_kernel(HEADER + textwrap.dedent(body), display="k.py")
    return simulate(getattr(mod, entry), *args, target=target, trace_only=True, **kw)


def line_of(body: str, marker: str) -> int:
    """1-based line in the traced source (HEADER + body) of the first line containing `marker`."""
    for n, line in enumerate((HEADER + textwrap.dedent(body)).splitlines(), 1):
        if marker in line:
            return n
    raise AssertionError(f"no line with {marker!r}")
