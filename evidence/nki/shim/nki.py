"""`neuronxcc.nki` (and `nki`) top-level: decorators, simulate_kernel and the submodules."""

from __future__ import annotations

from evidence.nki.kernel import Kernel, baremetal, benchmark, jit, profile, simulate_kernel, trace  # noqa: F401
from evidence.nki.shim import compiler, isa, language, typing  # noqa: F401
from evidence.nki.shim.typing import tensor  # noqa: F401

__all__ = ["Kernel", "baremetal", "benchmark", "compiler", "isa", "jit", "language", "profile",
           "simulate_kernel", "tensor", "trace", "typing"]
