"""`neuronxcc.nki.compiler` (ncc): allocation kinds and compiler directives (no-ops in simulation)."""

from __future__ import annotations

from evidence.nki.shim.language import Buffer

sbuf, psum = Buffer("sbuf"), Buffer("psum")


def _directive(*args, **kwargs):
    """Decorator-style directives (skip_middle_end_transformations, ...) do not change semantics."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


skip_middle_end_transformations = _directive
enable_stack_allocator = _directive
force_auto_alloc = _directive


def multi_buffer(n=2):
    return n
