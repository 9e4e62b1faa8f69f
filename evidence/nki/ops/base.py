"""Building blocks shared by the op tables: the `Op` row, operand checks, results, cost helpers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from evidence.nki import dtypes
from evidence.nki.alloc import HBM_KINDS, ONCHIP, Alloc
from evidence.nki.dispatch import Call
from evidence.nki.host_access import note_host_operand
from evidence.nki.indexing import fit_mask, full_mask, mask_array, order_dependent_mask
from evidence.nki.ops.functions import OPERAND_FREE, SCALAR_ALU, op_name
from evidence.nki.tensor import Tensor

PMAX = 128
PSUM_FMAX_BYTES = 2048
MIN_II = 64


@dataclass(frozen=True, slots=True)
class Op:
    """One NKI primitive: its check rule (validate + plan), execute rule (numpy) and cost rule."""

    name: str
    check: Callable[..., Call]
    execute: Callable[[object, Call], None] | None
    cost: Callable[[object, Call], float] | None
    # True: the execute rule orders itself against pending TensorE jobs (evidence.nki.pipeline), so
    # dispatch does not wait for the jobs touching the instruction's tiles before calling it
    concurrent: bool = False


def table(*ops: Op) -> dict[str, Op]:
    return {o.name: o for o in ops}


# --- operand checks ----------------------------------------------------------------------

def tile(st, x, op: str, arg: str, buffers=ONCHIP) -> Tensor:
    """Validate a tile operand: a Tensor in an allowed buffer, partition dim first and <= 128."""
    if not isinstance(x, Tensor):
        raise st.error("err_invalid_operand", f"'{op}' expects a tile for '{arg}', got {type(x).__name__}")
    buf = x.alloc.buffer
    if buf not in buffers:
        want = "|".join(sorted({"hbm" if b in HBM_KINDS else b for b in buffers}))
        raise st.error(
            "err_unsupported_memory",
            f"'{op}' expects '{arg}' in {want} but got {buf} ({list(x.shape)})",
        )
    if buf in ONCHIP:
        if x.pdim != 0:
            raise st.error(
                "err_failed_to_infer_tile_from_local_tensor",
                f"'{arg}' of '{op}' {list(x.shape)} has block dimensions before its partition dimension; "
                "index it down to a tile first",
            )
        check_partitions(st, x.shape, op, arg)
    return x


def check_partitions(st, shape, op: str, arg: str) -> None:
    if shape and shape[0] > PMAX:
        raise st.error(
            "err_num_partition_exceed_arch_limit",
            f"number of partitions {shape[0]} of '{arg}' {list(shape)} in '{op}' exceed architecture limitation of {PMAX}",
        )


def same_partitions(st, a: Tensor, b: Tensor, op: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise st.error(
            "err_num_partition_mismatch",
            f"'{op}' operands have different partition counts: {list(a.shape)} vs {list(b.shape)}; "
            "use broadcast_to first",
        )


def same_elements(a: Tensor, b: Tensor) -> bool:
    """Shapes that differ but hold the same elements per partition: [P, a*b] and [P, a, b], [P] and [P, 1]."""
    return a.partitions == b.partitions and a.size == b.size


def resolve_dtype(st, dt, default):
    if dt is None:
        return default
    try:
        return dtypes.resolve(dt)
    except (TypeError, ValueError) as exc:
        raise st.error("err_invalid_dtype", str(exc)) from exc


def resolve_op(st, table_: dict, fn, what: str):
    """An op argument (`op=nl.exp`, `op0=np.add`, a name) as (name, entry of `table_`), or a clear error."""
    try:
        name = op_name(fn)
    except ValueError as exc:
        raise st.error("err_invalid_op", str(exc)) from None
    if name not in table_:
        raise st.error("err_unsupported_op_argument", f"'{name}' is not a supported {what}")
    return name, table_[name]


def scalar_alu_op(st, fn, operand, reverse: bool, what: str):
    """An ALU operator of tensor_scalar/tensor_scalar_reduce as (name, callable). `abs` takes no operand: only
    the documented idiom (operand 0.0, not reversed) is simulated, since nothing says what another operand does."""
    name, f = resolve_op(st, SCALAR_ALU, fn, what)
    if name in OPERAND_FREE and (reverse or isinstance(operand, Tensor) or operand != 0):
        raise st.error("err_unsupported_op_argument", f"'{name}' as {what} is simulated only with a scalar operand "
                       f"0.0 and no reverse (what it does with {operand!r} is not documented)"[:300])
    return name, f


def scalar_operand(st, x, data: Tensor, op: str, arg: str):
    """A per-partition operand: a scalar or a [P, 1] tile with the partitions of `data`."""
    if isinstance(x, Tensor):
        tile(st, x, op, arg)
        if x.shape[0] != data.shape[0] or free_size(x.shape) != 1:
            raise st.error(
                "err_invalid_scalar_operand", f"'{arg}' of '{op}' must be a scalar or a [{data.shape[0]}, 1] tile, got {list(x.shape)}"
            )
    return x


def op_mask(st, mask) -> np.ndarray | None:
    order_dependent_mask(st, mask)
    try:
        return mask_array(mask)
    except Exception as exc:
        raise st.error(getattr(exc, "code", "err_unsupported_expression_in_mask"), getattr(exc, "message", str(exc))) from exc


# --- shapes and values -------------------------------------------------------------------

def lead_align(a: np.ndarray, nd: int) -> np.ndarray:
    """Partition-leading alignment: a [P] tile acts as [P, 1] next to a [P, F] tile (REFERENCE §9.1)."""
    return a.reshape(a.shape + (1,) * (nd - a.ndim)) if a.ndim < nd else a


def bshape(st, shapes: list[tuple[int, ...]], op: str) -> tuple[int, ...]:
    shapes = [s for s in shapes if s is not None]
    if len(shapes) == 1 or all(s == shapes[0] for s in shapes):
        return tuple(shapes[0])
    nd = max(len(s) for s in shapes)
    parts = {s[0] for s in shapes if s and len(s) == nd} - {1}
    if len(parts) > 1:
        raise st.error(
            "err_num_partition_mismatch",
            f"'{op}' operands have different partition counts: {[list(s) for s in shapes]}; use broadcast_to first",
        )
    try:
        return np.broadcast_shapes(*[tuple(s) + (1,) * (nd - len(s)) for s in shapes])
    except ValueError:
        try:
            return np.broadcast_shapes(*shapes)
        except ValueError:
            raise st.error(
                "err_shape_mismatch", f"'{op}' operand shapes {[list(s) for s in shapes]} do not broadcast"
            ) from None


_PENDING = np.empty(0, dtype=np.float32)  # a result's storage before its execute rule ran


def fresh(st, shape, dt, buffer: str = "sbuf") -> Tensor:
    """A new result tile; its data is filled by the execute rule (or stays a stub in trace-only mode)."""
    shape = tuple(map(int, shape))
    stub = np.broadcast_to(np.zeros((), dtype=dtypes.storage(dt)), shape) if st.trace_only else _PENDING
    t = Tensor.whole(Alloc(st, buffer, shape, dt, stub))
    t.fresh = True
    return t


def set_result(t: Tensor, arr: np.ndarray, mask: np.ndarray | None = None) -> None:
    """Store an fp32 (or int) result into a fresh tile with RNE casting.

    Masked-out elements are undefined: NaN (integers: the sentinel), never written to a destination
    (`t.valid`), and reading them is an undefined read (`wmask`), as for never-written memory.
    """
    arr = np.asarray(arr)
    if arr.shape != t.shape:
        arr = np.broadcast_to(lead_align(arr, len(t.shape)) if arr.ndim < len(t.shape) else arr, t.shape)
    alloc = t.alloc
    if mask is not None:
        m = fit_mask(mask, t.shape)
        fill = np.nan if arr.dtype.kind == "f" else dtypes.INT_SENTINEL
        arr = np.where(m, arr, fill)
        t.valid = np.broadcast_to(m, t.shape)
        if not t.valid.all():
            alloc.wmask = t.wmask = np.array(t.valid)
            alloc.unwritten = t.valid.size - int(np.count_nonzero(t.valid))
    out = dtypes.cast(arr, t.dtype)
    if not out.flags.writeable or out.base is not None and not out.flags.owndata:
        out = np.array(out, dtype=dtypes.storage(t.dtype))
    alloc.data = t.data = out
    alloc.origin = alloc.state.read_origin


def unshared(v: np.ndarray, src: Tensor) -> np.ndarray:
    """`v` (read from `src`), copied when it is `src`'s whole storage: a result tile must never alias
    another allocation, or writing the tile in place would change the source (e.g. a kernel input)."""
    return v.copy() if v is src.alloc.data else v


def reduced_mask(mask: np.ndarray | None, shape, axes: tuple[int, ...], keepdims: bool) -> np.ndarray | None:
    """The elements of a reduction's result that a masked instruction produces: those whose
    reduced lane holds at least one masked-in element (a mask on the reduced axes only thins them)."""
    if mask is None:
        return None
    m = full_mask(mask, shape)
    return m.any(axis=axes, keepdims=keepdims)


def value(x, mask=None) -> np.ndarray:
    """Operand values: a tile's array (uninitialised reads reported) or a scalar as an array."""
    if isinstance(x, Tensor):
        return x.read(mask)
    note_host_operand(x)
    return np.asarray(x)


def scalar_value(x, nd: int) -> np.ndarray:
    """A per-partition operand's fp32 values, shaped to broadcast against an `nd`-axis tile."""
    if isinstance(x, Tensor):
        v = dtypes.to_f32(x.read())
        return v.reshape((v.shape[0],) + (1,) * (nd - 1))
    return np.float32(x)


def f32(x, mask=None) -> np.ndarray:
    v = value(x, mask)
    return v if v.dtype == np.float32 else v.astype(np.float32)


# nisa.reduce_cmd: idle, reset, reduce, reset_reduce, load_reduce (the integer values of the shim's enum)
REDUCE_IDLE, REDUCE_RESET, REDUCE_REDUCE, REDUCE_RESET_REDUCE, REDUCE_LOAD = 0, 1, 2, 3, 4


def reduce_command(st, cmd, default: int) -> int:
    if cmd is None:
        return default
    try:
        value_ = int(cmd)
    except (TypeError, ValueError):
        value_ = -1
    if value_ not in (REDUCE_IDLE, REDUCE_RESET, REDUCE_REDUCE, REDUCE_RESET_REDUCE, REDUCE_LOAD):
        raise st.error("err_invalid_reduce_cmd", f"reduce_cmd must be a nisa.reduce_cmd member, got {cmd!r}")
    return value_


def accumulate_registers(st, engine: str, cmd: int, rows: np.ndarray, fn, identity: float) -> np.ndarray:
    """The per-partition accumulator registers an engine keeps across instructions (REFERENCE §3.7).

    `rows` is this instruction's per-partition reduction ([P] fp32). Registers start undefined (NaN):
    a `reduce` without an earlier reset accumulates onto garbage, as on hardware.
    """
    regs = st.acc_regs.get(engine)
    if regs is None:
        regs = st.acc_regs[engine] = np.full(PMAX, np.nan, dtype=np.float32)
    n = rows.shape[0]
    if cmd in (REDUCE_RESET, REDUCE_RESET_REDUCE):
        regs[:n] = identity
    if cmd in (REDUCE_REDUCE, REDUCE_RESET_REDUCE):
        regs[:n] = fn(regs[:n], rows)
    return regs[:n].copy()


def scalar_dtype(x):
    return x.dtype if isinstance(x, Tensor) else x


def free_size(shape) -> int:
    n = 1
    for s in shape[1:]:
        n *= s
    return n


# --- costs (REFERENCE §5.2; cycles of the engine's clock) -----------------------------------

def per_partition(t) -> int:
    """Elements per partition of a tile, or of a tensor with block dimensions before its partition axis."""
    if t.pdim:
        return t.size // max(t.shape[t.pdim], 1)
    return free_size(t.shape)


def cost_stream(st, c: Call, passes: float = 1.0) -> float:
    n = per_partition(c.out if c.out is not None else c.ins[0])
    return max(MIN_II, passes * n)


def cost_two_inputs(st, c: Call) -> float:
    return cost_stream(st, c, 2.0)


def cost_gpsimd(st, c: Call) -> float:
    return 150 + per_partition(c.out if c.out is not None else c.ins[0])


def cost_dma(st, c: Call) -> float:
    """Nanoseconds: fixed ~1300 ns per transfer plus bytes at the per-core DMA bandwidth."""
    nbytes = max([t.size * t.itemsize for t in c.ins] + [c.out.size * c.out.itemsize if c.out is not None else 0])
    return 1300.0 + nbytes / _DMA_BANDWIDTH.get(st.target, 368.0)


_DMA_BANDWIDTH = {"trn1": 272.0, "inf2": 272.0, "trn3": 528.0}  # per core, REFERENCE §1, GB/s == bytes/ns
