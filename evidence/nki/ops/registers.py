"""Register loads and stores (nki 0.3+ `nisa.register_load(reg, src)`, `nisa.register_store(dst, reg)`):
a one-element tile moved between memory and an engine sequencer's register (evidence/nki/registers.py)."""

from __future__ import annotations

import numpy as np

from evidence.nki.dispatch import Call
from evidence.nki.ops.base import Op, table
from evidence.nki.registers import VirtualRegister
from evidence.nki.tensor import Tensor


def _one_element(st, t, api: str, arg: str) -> Tensor:
    if not isinstance(t, Tensor) or int(np.prod(t.shape)) != 1:
        raise st.error("err_invalid_arguments", f"'nisa.{api}' {arg} must be a one-element tensor, got "
                       f"{list(t.shape) if isinstance(t, Tensor) else type(t).__name__}")
    return t


def check_register_load(st, dst, src, **_):
    if not isinstance(dst, VirtualRegister):
        raise st.error("err_invalid_arguments", "'nisa.register_load' dst must be a register from nisa.register_alloc()")
    c = Call("nisa.register_load", "gpsimd")  # a sequencer load; the trace knows compute engines and DMA only
    c.ins = [_one_element(st, src, "register_load", "src")]
    c.p["reg"] = dst
    return c


def exec_register_load(st, c: Call) -> None:
    v = np.asarray(c.ins[0].read()).reshape(-1)
    c.p["reg"].value = int(v[0]) if v.size and np.isfinite(v[0]) else 0


OPS = table(Op("nisa.register_load", check_register_load, exec_register_load, None))
