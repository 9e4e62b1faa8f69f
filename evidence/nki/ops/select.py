"""Selection with a reduction into the engine's accumulator registers (REFERENCE §3.7).

`range_select` keeps the elements whose free index (plus `range_start`) lies between two
per-partition bounds; `select_reduce` picks `on_true` or `on_false` by a predicate tile. Both
reduce what they keep with max into VectorE's accumulator registers, which persist across
instructions (`reduce_cmd`), and can read them out into `reduce_res`.
"""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes
from evidence.nki.dispatch import Call
from evidence.nki.ops.base import (
    REDUCE_IDLE, REDUCE_RESET_REDUCE, Op, accumulate_registers, cost_stream, f32, free_size, fresh, op_mask,
    reduce_command, resolve_dtype, resolve_op, scalar_operand, scalar_value, set_result, table, tile,
)
from evidence.nki.ops.functions import BINARY
from evidence.nki.tensor import Tensor

_COMPARISONS = {k: BINARY[k] for k in ("equal", "less", "less_equal", "greater", "greater_equal")}
_MAX_ONLY = {"max": np.maximum, "amax": np.maximum, "maximum": np.maximum}
FP32_MIN = float(np.finfo(np.float32).min)


def _reduce_res(st, res, data: Tensor, op: str):
    if res is None:
        return None
    res = tile(st, res, op, "reduce_res")
    if res.shape[0] != data.shape[0] or free_size(res.shape) != 1:
        raise st.error("err_invalid_reduce_res",
                       f"'reduce_res' of '{op}' must be [{data.shape[0]}, 1], got {list(res.shape)}")
    return res


def _finish(st, c: Call, kept: np.ndarray) -> None:
    """Result, registers and the optional read-out into reduce_res."""
    set_result(c.out, kept)
    rows = kept.reshape(kept.shape[0], -1).max(axis=1)
    regs = accumulate_registers(st, "vector", c.p["cmd"], rows, np.maximum, -np.inf)
    res = c.p["res"]
    if res is not None:
        res.write(regs.reshape(res.shape))


def check_range_select(st, on_true_tile, comp_op0, comp_op1, bound0, bound1, *, reduce_cmd=None, reduce_res=None,
                       reduce_op=np.max, range_start=0, on_false_value=FP32_MIN, dtype=None, mask=None, **_):
    if st.nc_version < 3:
        raise st.error("err_unsupported_on_target", f"'range_select' needs NeuronCore-v3 (trn2); target is {st.target}")
    data = tile(st, on_true_tile, "range_select", "on_true_tile")
    if not dtypes.is_float(data.dtype):
        raise st.error("err_unsupported_dtype",
                       f"'range_select' on_true_tile must be a float tile, got {dtypes.name(data.dtype)}")
    # the engine takes an fp32 immediate: nki-library's literal -3.4028235e38 is fp32.min once rounded
    if np.float32(on_false_value) != np.float32(FP32_MIN):
        raise st.error("err_invalid_on_false_value",
                       f"'range_select' on_false_value must be nl.fp32.min ({FP32_MIN:g}), got {on_false_value!r}")
    resolve_op(st, _MAX_ONLY, reduce_op, "range_select reduce_op (only max)")
    c = Call("nisa.range_select", "vector")
    c.mask = op_mask(st, mask)
    b0 = scalar_operand(st, bound0, data, "range_select", "bound0")
    b1 = scalar_operand(st, bound1, data, "range_select", "bound1")
    c.ins = [data] + [b for b in (b0, b1) if isinstance(b, Tensor)]
    c.p.update(op0=resolve_op(st, _COMPARISONS, comp_op0, "comparison")[1],
               op1=resolve_op(st, _COMPARISONS, comp_op1, "comparison")[1], b0=b0, b1=b1, start=int(range_start),
               cmd=reduce_command(st, reduce_cmd, REDUCE_RESET_REDUCE),
               res=_reduce_res(st, reduce_res, data, "range_select"))
    c.out = c.result = fresh(st, data.shape, resolve_dtype(st, dtype, data.dtype))
    if c.p["res"] is not None and st.trace_only:
        c.p["res"].write(np.zeros(()))
    return c


def exec_range_select(st, c: Call) -> None:
    data, p = c.ins[0], c.p
    v = f32(data, c.mask).reshape(data.shape[0], -1)
    idx = (p["start"] + np.arange(v.shape[1], dtype=np.float32))[None, :]
    keep = p["op0"](idx, scalar_value(p["b0"], 2)) & p["op1"](idx, scalar_value(p["b1"], 2))
    _finish(st, c, np.where(keep, v, np.float32(FP32_MIN)).reshape(data.shape))


def check_select_reduce(st, dst=None, predicate=None, on_true=None, on_false=None, *, reduce_res=None, reduce_cmd=None,
                        reduce_op=np.maximum, reverse_pred=False, dtype=None, mask=None, **_):
    data = tile(st, on_true, "select_reduce", "on_true")
    pred = tile(st, predicate, "select_reduce", "predicate")
    if pred.shape[0] != data.shape[0] or free_size(pred.shape) != free_size(data.shape):
        raise st.error("err_shape_mismatch",
                       f"'select_reduce' predicate {list(pred.shape)} and on_true {list(data.shape)} differ")
    if not dtypes.is_int(pred.dtype):
        raise st.error("err_unsupported_dtype",
                       f"'select_reduce' predicate must be an integer tile, got {dtypes.name(pred.dtype)}")
    if data.alloc.buffer == "psum" and pred.alloc.buffer == "psum":
        raise st.error("err_unsupported_memory", "'select_reduce' cannot read on_true and predicate both from PSUM")
    resolve_op(st, _MAX_ONLY, reduce_op, "select_reduce reduce_op (only max)")
    c = Call("nisa.select_reduce", "vector")
    c.mask = op_mask(st, mask)
    other = scalar_operand(st, on_false, data, "select_reduce", "on_false")
    c.ins = [data, pred] + ([other] if isinstance(other, Tensor) else [])
    c.p.update(pred=pred, other=other, rev=bool(reverse_pred), cmd=reduce_command(st, reduce_cmd, REDUCE_IDLE),
               res=_reduce_res(st, reduce_res, data, "select_reduce"))
    out_dtype = dtype if dtype is not None else (dst.dtype if isinstance(dst, Tensor) else data.dtype)
    c.out = c.result = fresh(st, data.shape, resolve_dtype(st, out_dtype, data.dtype))
    if isinstance(dst, Tensor):  # the beta form also takes the destination first
        c.p["dst"] = tile(st, dst, "select_reduce", "dst")
    if c.p["res"] is not None and st.trace_only:
        c.p["res"].write(np.zeros(()))
    return c


def exec_select_reduce(st, c: Call) -> None:
    data, p = c.ins[0], c.p
    take = p["pred"].read().reshape(data.shape) != 0
    if p["rev"]:
        take = ~take
    kept = np.where(take, f32(data, c.mask), scalar_value(p["other"], len(data.shape)))
    _finish(st, c, kept)
    if "dst" in p:
        p["dst"].write(c.out.data.reshape(p["dst"].shape))


OPS = table(
    Op("nisa.range_select", check_range_select, exec_range_select, cost_stream),
    Op("nisa.select_reduce", check_select_reduce, exec_select_reduce, cost_stream),
)
