"""Engine-sequencer registers of nki 0.3+ (`nisa.register_alloc/move/load/store`, `nisa.VirtualRegister`) and
the loops they bound (`nl.fori_loop(lower, upper, body)`, `nl.dynamic_range(reg)`, `while reg:`).

A register holds one 32-bit integer. In the simulator it is a plain Python value known at trace time
(`register_load` reads its one-element source tile when it runs; trace-only runs read 0), so loops over
run-time bounds run their real trip count. `register_load` and `register_store` touch tensor memory and
are ops (evidence/nki/ops/registers.py); allocation, moves and loops are helpers.
"""

from __future__ import annotations

from evidence.nki import state as _state
from evidence.nki.loops import LoopRange


class VirtualRegister:
    __slots__ = ("value",)

    def __init__(self, value=0) -> None:
        self.value = int(value.value if isinstance(value, VirtualRegister) else (value or 0))

    # a register bounds loops and offsets access patterns; as a Python int it is its current value
    def __index__(self) -> int:
        return self.value

    __int__ = __index__

    def __bool__(self) -> bool:
        return self.value != 0

    def __repr__(self) -> str:
        return f"VirtualRegister({self.value})"


def register_alloc(x=None) -> VirtualRegister:
    return VirtualRegister(x)


def register_move(dst: VirtualRegister, imm) -> None:
    _register(dst, "register_move").value = int(imm)


def _register(reg, api: str) -> VirtualRegister:
    if not isinstance(reg, VirtualRegister):
        raise _state.current().error("err_invalid_arguments",
                                     f"'nisa.{api}' needs a register from nisa.register_alloc(), got {type(reg).__name__}")
    return reg


def fori_loop(lower, upper, body_fun, step=1) -> None:
    """`body_fun(i)` for i in range(lower, upper, step), i a register; in order, like a sequential loop."""
    if int(step) <= 0:
        raise _state.current().error("err_invalid_arguments", f"nl.fori_loop step must be a positive integer, got {step}")
    for i in LoopRange("sequential", range(int(lower), int(upper), int(step))):
        body_fun(VirtualRegister(i))


def dynamic_range(start, stop=None, step=1, **_directives) -> LoopRange:
    """`nl.dynamic_range` (deprecated in nki 0.6 for fori_loop): a loop whose bounds may be registers."""
    if stop is None:
        start, stop = 0, start
    return LoopRange("sequential", range(int(start), int(stop), int(step)))
