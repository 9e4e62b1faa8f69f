"""Helpers for cost-model tests: trace small kernels written inline."""

from __future__ import annotations

import textwrap
from pathlib import Path

from evidence.nki import load_kernel, simulate
from evidence.perf.spec import load_spec

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


def write_profile(directory: Path, target: str, **changes) -> Path:
    """A complete hardware table, as a user's profile file: every parameter of trn2's, with `changes`."""
    params = {name: param.value for name, param in load_spec("trn2").params}
    params.update(changes)
    f = directory / f"{target}-profile.toml"
    f.write_text(f'target = "{target}"\nversion = "lab-2026-11"\n[params]\n'
                 + "".join(f"{k} = {v}\n" for k, v in params.items()))
    return f
