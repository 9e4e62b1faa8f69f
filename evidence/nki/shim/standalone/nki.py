"""`nki` (standalone, 0.3 to 0.7) top level: `nki.jit`, `nki.simulate`, and the submodules.

`nki.jit` no longer takes `mode=` (0.3 errors on it); the target comes from `NEURON_PLATFORM_TARGET_OVERRIDE`
(trn1/gen2, trn2/gen3, trn3/gen4). `platform_target=` is still accepted and ignored (`nki.jit(fn=None, **kwargs)`;
nki-library's own standalone kernels pass it), as the beta dialect does. `nki.simulate(kernel)(*args)`
runs a kernel on the simulator and returns its outputs as numpy arrays, as the real one does.
"""

from __future__ import annotations

import os

from evidence.nki import state as _state
from evidence.nki.errors import SimulationError
from evidence.nki.kernel import Kernel, baremetal, benchmark, profile  # noqa: F401
from evidence.nki.shim import compiler, typing  # noqa: F401  (nki.compiler, nki.typing)
from evidence.nki.shim.standalone import isa, language, tensor  # noqa: F401
from evidence.nki.shim.internal import COLLECTIVES as collectives  # noqa: F401  (nki.collectives: unsupported_op)
from evidence.nki.simulate import simulate as _simulate

_REMOVED = {
    "mode": "nki.jit(mode=...) was removed in nki 0.3: the framework is detected from the arguments, and "
            "nki.simulate(kernel) or NKI_SIMULATOR=1 runs the CPU simulator",
}


def platform_target() -> str:
    """NEURON_PLATFORM_TARGET_OVERRIDE as a simulator target (trn2 when unset)."""
    raw = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "").strip().lower()
    if not raw:
        return "trn2"
    target = _state.PLATFORM_TARGETS.get(raw)
    if target is None or target not in _state.SBUF_USABLE_BYTES:
        raise SimulationError("unsupported_target", f"NEURON_PLATFORM_TARGET_OVERRIDE={raw!r}: the simulator models "
                              f"{', '.join(sorted(_state.SBUF_USABLE_BYTES))}")
    return target


class StandaloneKernel(Kernel):
    def target(self) -> str:
        return platform_target()


def jit(func=None, *args, **options):
    for name in options:
        if name in _REMOVED:
            raise SimulationError("err_removed_argument", _REMOVED[name])
    if func is None or not callable(func):
        return lambda f: StandaloneKernel(f, "auto", (), None, options)
    return StandaloneKernel(func, "auto", (), None, options)


def simulate(kernel):
    """`nki.simulate(kernel)(*args)`: the kernel's outputs, computed by the CPU simulator."""
    def run(*args, **kwargs):
        return _simulate(kernel, *args, target=platform_target(), **kwargs).returned

    return run


__all__ = ["baremetal", "benchmark", "compiler", "isa", "jit", "language", "platform_target", "profile", "simulate",
           "tensor", "typing"]
