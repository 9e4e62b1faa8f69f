"""Collectives across SPMD instances, on a single rank (REFERENCE §3.6 `nl.all_reduce`).

SPMD instances run one after another in the simulator, so a collective over more than one instance
cannot be simulated: it fails with `unsupported_op` naming the op and the instance count (the
collector turns that into `sim.incomplete`, never evidence against the kernel). Over one instance a
reduction is the identity.
"""

from __future__ import annotations

from evidence.nki.dispatch import Call
from evidence.nki.errors import UnsupportedOpError
from evidence.nki.ops.base import (
    Op, cost_stream, f32, fresh, op_mask, resolve_dtype, resolve_op, set_result, table, tile,
)
from evidence.nki.ops.functions import BINARY


def _instances(st, program_axes) -> int:
    axes = program_axes if isinstance(program_axes, (tuple, list)) else (program_axes,)
    n = 1
    for a in axes:
        a = int(a)
        n *= st.grid[a] if a < len(st.grid) else 1
    return n


def check_all_reduce(st, x, op, program_axes=(), *, dtype=None, mask=None, **_):
    x = tile(st, x, "all_reduce", "x")
    resolve_op(st, BINARY, op, "all_reduce op")
    ranks = _instances(st, program_axes)
    if ranks > 1:
        file, line = st.where()
        raise UnsupportedOpError(
            "unsupported_op",
            f"NKI API 'all_reduce' across {ranks} SPMD instances (program_axes={program_axes!r}) is not simulated: "
            "instances run one after another, so no instance sees the others' values", file, line)
    c = Call("all_reduce", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [x]
    c.out = c.result = fresh(st, x.shape, resolve_dtype(st, dtype, x.dtype))
    return c


def exec_all_reduce(st, c: Call) -> None:
    x = c.ins[0]
    v = x.read(c.mask)
    set_result(c.out, v if v.dtype.kind in "iu" else f32(x, c.mask), c.mask)


OPS = table(Op("all_reduce", check_all_reduce, exec_all_reduce, cost_stream))
