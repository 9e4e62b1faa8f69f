"""Reductions along free axes, across partitions, and the statistics instructions (REFERENCE §3.6-§3.7)."""

from __future__ import annotations

import linecache
import re
import sys

import numpy as np

from evidence.nki import dtypes
from evidence.nki.dispatch import Call
from evidence.nki.ops.base import (
    MIN_II, Op, cost_gpsimd, cost_stream, f32, free_size, fresh, lead_align, op_mask, reduced_mask, resolve_dtype,
    resolve_op, scalar_alu_op, scalar_operand, scalar_value, set_result, table, tile,
)
from evidence.nki.indexing import full_mask
from evidence.nki.ops.functions import BINARY, REDUCE
from evidence.nki.tensor import Tensor


def _axes(st, axis, nd: int, op: str, strict: bool) -> tuple[int, ...]:
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    try:
        positive = all(int(a) > 0 for a in axes)
        axes = tuple(sorted(int(a) % nd for a in axes))
    except (TypeError, ValueError):
        raise st.error("err_invalid_reduce_axis", f"'{op}' axis {axis!r} is not an int or list of ints") from None
    if 0 in axes:
        raise st.error(
            "err_unsupported_reduce_axis",
            f"'{op}' cannot reduce the partition axis 0 (axis={axis!r}); reduce free axes, or use "
            "tensor_partition_reduce / a matmul with ones",
        )
    if strict and (axes[-1] != nd - 1 or axes != tuple(range(axes[0], axes[0] + len(axes)))):
        # nki 0.3/0.4 counted nisa.tensor_reduce axes from the most minor free axis (axis 1 = the last one); the only
        # sets legal under both numberings are all free axes, so a set legal only that way means the same axes here
        if st.dialect == "standalone" and positive and axes == tuple(range(1, len(axes) + 1)):
            return tuple(sorted(nd - a for a in axes))
        raise st.error(
            "err_unsupported_reduce_axis",
            f"'{op}' axes {list(axes)} must be consecutive free axes that include the last axis",
        )
    return axes


def _reduce_call(st, name: str, engine: str, x, axis, keepdims: bool, dtype, mask, strict: bool, red: str):
    x = tile(st, x, name, "x")
    nd = len(x.shape)
    axes = _axes(st, axis, nd, name, strict)
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape)) if keepdims else tuple(
        s for i, s in enumerate(x.shape) if i not in axes)
    default = x.dtype
    if red == "mean" and dtypes.is_int(x.dtype):
        default = dtypes.float32
    if red == "all":
        default = dtypes.bool_
    c = Call(name, engine)
    c.mask = op_mask(st, mask)
    c.ins = [x]
    c.p.update(axes=axes, keepdims=keepdims, red=red)
    c.out = c.result = fresh(st, shape, resolve_dtype(st, dtype, default))
    c.elements = x.size
    return c


def exec_reduce(st, c: Call) -> None:
    x = c.ins[0]
    red = c.p["red"]
    v = x.read(c.mask)
    # Result elements whose whole reduced lane is masked out are undefined, like an element-wise result's.
    out_mask = reduced_mask(c.mask, x.shape, c.p["axes"], c.p["keepdims"])
    m = None if c.mask is None else full_mask(c.mask, v.shape)
    if red in ("bitwise_or", "bitwise_and", "bitwise_xor"):
        fn = REDUCE[red]
        r = v if m is None else np.where(m, v, np.array(-1 if red == "bitwise_and" else 0).astype(v.dtype))
        for ax in reversed(c.p["axes"]):
            r = fn(r, axis=ax, keepdims=c.p["keepdims"])
        set_result(c.out, r, out_mask)
        return
    v = dtypes.to_f32(v)
    if m is not None:  # masked-out elements do not take part
        if red in ("mean", "var"):  # over the masked-in elements of each lane
            kw = {"axis": c.p["axes"], "keepdims": c.p["keepdims"]}
            n = np.maximum(m.sum(**kw), 1).astype(np.float32)
            mean = np.where(m, v, np.float32(0)).sum(**kw) / n
            r = mean if red == "mean" else (np.where(m, (v - _keep(mean, c.p["axes"], c.p["keepdims"])) ** 2, 0)
                                            .sum(**kw) / n)
            set_result(c.out, r, out_mask)
            return
        neutral = {"sum": 0, "max": -np.inf, "min": np.inf, "prod": 1, "all": 1}[red]
        v = np.where(m, v, np.float32(neutral))
    kw = {"axis": c.p["axes"], "keepdims": c.p["keepdims"]}
    if red == "var":
        r = v.var(**kw)
    elif red == "all":
        r = np.all(v != 0, **kw)
    else:
        r = getattr(np, red)(v, **kw)
    set_result(c.out, r, out_mask)


def _keep(r: np.ndarray, axes: tuple[int, ...], keepdims: bool) -> np.ndarray:
    """A reduced array with its reduced axes back as unit axes (to broadcast against the input)."""
    return r if keepdims else np.expand_dims(r, axes)


def nl_reduction(name: str) -> Op:
    def check(st, x, axis, *, dtype=None, mask=None, keepdims=False, **_):
        return _reduce_call(st, name, "vector", x, axis, keepdims, dtype, mask, False, name)
    return Op(name, check, exec_reduce, lambda st, c: max(MIN_II, free_size(c.ins[0].shape)))


_RED_NAMES = {"add": "sum", "sum": "sum", "max": "max", "maximum": "max", "amax": "max", "min": "min",
              "minimum": "min", "amin": "min", "multiply": "prod", "prod": "prod", "mean": "mean",
              "bitwise_or": "bitwise_or", "bitwise_and": "bitwise_and", "bitwise_xor": "bitwise_xor",
              "logical_and": "all", "all": "all"}


def _red_name(st, op) -> str:
    name = resolve_op(st, {k: k for k in _RED_NAMES}, op, "reduction op")[0]
    return _RED_NAMES[name]


def check_tensor_reduce(st, op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, **_):
    c = _reduce_call(st, "nisa.tensor_reduce", "vector", data, axis, keepdims, dtype, mask, True, _red_name(st, op))
    c.p["negate"] = negate
    return c


def exec_tensor_reduce(st, c: Call) -> None:
    exec_reduce(st, c)
    if c.p.get("negate"):
        c.out.alloc.data = c.out.data = dtypes.cast(-dtypes.to_f32(c.out.data), c.out.dtype)


def check_partition_reduce(st, op, data, *, mask=None, dtype=None, **_):
    data = tile(st, data, "tensor_partition_reduce", "data", ("sbuf",))
    c = Call("nisa.tensor_partition_reduce", "gpsimd")
    c.mask = op_mask(st, mask)
    c.ins = [data]
    c.p["red"] = _red_name(st, op)
    c.out = c.result = fresh(st, (1,) + tuple(data.shape[1:]), resolve_dtype(st, dtype, data.dtype))
    return c


def exec_partition_reduce(st, c: Call) -> None:
    x = c.ins[0]
    v = x.read(c.mask)
    red = c.p["red"]
    m = None if c.mask is None else full_mask(c.mask, x.shape)
    if red.startswith("bitwise"):
        if m is not None:
            v = np.where(m, v, np.array(-1 if red == "bitwise_and" else 0).astype(v.dtype))
        r = REDUCE[red](v, axis=0, keepdims=True)
    else:
        v = dtypes.to_f32(v)
        if m is not None:  # masked-out partitions do not take part
            neutral = {"sum": 0, "max": -np.inf, "min": np.inf, "prod": 1, "all": 1}.get(red, 0)
            v = np.where(m, v, np.float32(neutral))
        r = getattr(np, red)(v, axis=0, keepdims=True)
    set_result(c.out, r, reduced_mask(c.mask, x.shape, (0,), True))


def check_tensor_scalar_reduce(st, *, data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None,
                               mask=None, **_):
    data = tile(st, data, "tensor_scalar_reduce", "data")
    res = tile(st, reduce_res, "tensor_scalar_reduce", "reduce_res")
    c = Call("nisa.tensor_scalar_reduce", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [data]
    c.p.update(f0=scalar_alu_op(st, op0, operand0, reverse0, "tensor_scalar_reduce op0")[1], o0=scalar_operand(st, operand0, data, "tensor_scalar_reduce", "operand0"),
               r0=reverse0, red=_red_name(st, reduce_op), res=res)
    c.out = c.result = fresh(st, data.shape, resolve_dtype(st, dtype, data.dtype))
    if st.trace_only:
        res.write(np.zeros(()))
    return c


def exec_tensor_scalar_reduce(st, c: Call) -> None:
    data = c.ins[0]
    p = c.p
    v = f32(data, c.mask)
    o = scalar_value(p["o0"], len(data.shape))
    r = p["f0"](o, v) if p["r0"] else p["f0"](v, o)
    set_result(c.out, r, c.mask)
    if c.mask is not None:
        neutral = {"sum": 0, "max": -np.inf, "min": np.inf, "prod": 1}.get(p["red"], 0)
        r = np.where(full_mask(c.mask, r.shape), r, np.float32(neutral))
    flat = r.reshape(r.shape[0], -1)
    red = getattr(np, p["red"])(flat, axis=1)
    rows = reduced_mask(c.mask, data.shape, tuple(range(1, len(data.shape))), False)
    # partitions the mask leaves out entirely are not computed: reduce_res keeps its old values there
    p["res"].write(red.reshape(p["res"].shape), None if rows is None else _rows_of(rows, p["res"].shape))


def _rows_of(rows: np.ndarray, shape) -> np.ndarray:
    """A per-partition bool vector as a mask over a [P, ...] destination."""
    return np.broadcast_to(rows.reshape((-1,) + (1,) * (len(shape) - 1)), tuple(shape))


def check_bn_stats(st, data, *, mask=None, dtype=None, **_):
    data = tile(st, data, "bn_stats", "data")
    if free_size(data.shape) > 512:
        raise st.error(
            "err_size_of_dimension_exceed_arch_limit",
            f"free size {free_size(data.shape)} of 'data' {list(data.shape)} in 'bn_stats' exceed architecture limitation of 512",
        )
    c = Call("nisa.bn_stats", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [data]
    c.out = c.result = fresh(st, (data.shape[0], 6), resolve_dtype(st, dtype, dtypes.float32))
    return c


def exec_bn_stats(st, c: Call) -> None:
    x = c.ins[0]
    v = f32(x, c.mask).reshape(x.shape[0], -1).astype(np.float64)
    m = np.ones(v.shape) if c.mask is None else full_mask(c.mask, x.shape).reshape(v.shape)
    v = np.where(m != 0, v, 0.0)  # masked-out (possibly NaN) elements must not poison the lane sums
    out = []
    for part, w in ((v[:, 0::2], m[:, 0::2]), (v[:, 1::2], m[:, 1::2])):  # masked-out elements do not count
        n = w.sum(axis=1)
        mean = (part * w).sum(axis=1) / np.maximum(n, 1)
        m2 = (((part - mean[:, None]) ** 2) * w).sum(axis=1)
        out += [n, mean, m2]
    set_result(c.out, np.stack(out, axis=1).astype(np.float32), _row_mask(c.mask, x.shape))


def check_bn_aggr(st, data, *, mask=None, dtype=None, **_):
    data = tile(st, data, "bn_aggr", "data")
    if free_size(data.shape) % 3:
        raise st.error("err_invalid_bn_aggr_input", f"bn_aggr input {list(data.shape)} is not a list of bn_stats triples")
    c = Call("nisa.bn_aggr", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [data]
    c.out = c.result = fresh(st, (data.shape[0], 2), resolve_dtype(st, dtype, dtypes.float32))
    return c


def exec_bn_aggr(st, c: Call) -> None:
    x = c.ins[0]
    rows = _row_mask(c.mask, x.shape)  # bn_aggr masks whole partitions
    v = f32(x, None if rows is None else _rows_of(rows, x.shape)).reshape(x.shape[0], -1, 3).astype(np.float64)
    n, mean, m2 = v[..., 0], v[..., 1], v[..., 2]
    total = n.sum(axis=1)
    mu = (n * mean).sum(axis=1) / np.maximum(total, 1)
    var = (m2.sum(axis=1) + (n * (mean - mu[:, None]) ** 2).sum(axis=1)) / np.maximum(total, 1)
    set_result(c.out, np.stack([mu, var], axis=1).astype(np.float32), rows)


def check_max8(st, *args, src=None, dtype=None, mask=None, **_):
    src = tile(st, src if src is not None else args[0], "max8", "src")
    n = free_size(src.shape)
    if not 8 <= n <= 16384:
        raise st.error("err_size_of_dimension_exceed_arch_limit", f"max8 needs 8..16384 elements per partition, got {n}")
    c = Call("nisa.max8", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [src]
    c.out = c.result = fresh(st, (src.shape[0], 8), resolve_dtype(st, dtype, src.dtype))
    return c


def exec_max8(st, c: Call) -> None:
    x = c.ins[0]
    v = f32(x, c.mask)
    if c.mask is not None:  # masked-out elements do not take part
        v = np.where(full_mask(c.mask, x.shape), v, np.float32(-np.inf))
    v = v.reshape(x.shape[0], -1)
    set_result(c.out, -np.sort(-v, axis=1)[:, :8], _row_mask(c.mask, x.shape))


def _row_mask(mask, shape) -> np.ndarray | None:
    """[P, 1] mask of the partitions a masked per-partition instruction computes."""
    rows = reduced_mask(mask, shape, tuple(range(1, len(shape))), False)
    return None if rows is None else rows[:, None]


def check_find_index8(st, *, data, vals, dtype=None, mask=None, **_):
    data = tile(st, data, "nc_find_index8", "data")
    vals = tile(st, vals, "nc_find_index8", "vals")
    if free_size(vals.shape) != 8:
        raise st.error("err_size_of_dimension_exceed_arch_limit", f"'vals' of nc_find_index8 must hold 8 values per partition, got {list(vals.shape)}")
    c = Call("nisa.nc_find_index8", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [data, vals]
    c.out = c.result = fresh(st, (data.shape[0], 8), resolve_dtype(st, dtype, dtypes.uint32))
    return c


def _first_matches(d: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per partition, the index of the first element equal to each value (distinct positions); -1 where a
    value does not occur."""
    idx = np.full(v.shape, -1, dtype=np.int64)
    for p in range(d.shape[0]):
        taken = np.zeros(d.shape[1], bool)
        for j in range(v.shape[1]):
            hits = np.flatnonzero((d[p] == v[p, j]) & ~taken)
            if hits.size:
                idx[p, j] = hits[0]
                taken[hits[0]] = True
    return idx


def _not_found(st, idx: np.ndarray, out_dtype) -> np.ndarray:
    """Values absent from the data: the docs call the index undefined; kernels that rely on it (the neuron-team
    MoE index kernels reduce with `min` over quadrants) read the all-ones index, UINT32_MAX. The simulation
    gives that index and a low finding that the result is undocumented."""
    missing = idx < 0
    if not missing.any():
        return idx
    d = np.dtype(dtypes.storage(out_dtype))
    st.finding("find_index8_value_not_found",
               f"nc_find_index8: {int(missing.sum())} of the {idx.size} values searched for do not occur in their "
               "partition's data; the documented result is undefined for them (simulated as the all-ones index, "
               "the UINT32_MAX kernels relying on it expect)", "low")
    return np.where(missing, np.iinfo(d).max if d.kind in "iu" else -1, idx)


def exec_find_index8(st, c: Call) -> None:
    x = c.ins[0]
    rows = _row_mask(c.mask, x.shape)  # these instructions mask whole partitions
    d = f32(x, None if rows is None else np.broadcast_to(rows, (x.shape[0], free_size(x.shape))).reshape(x.shape))
    vals = c.ins[1]
    v = f32(vals, None if rows is None else np.broadcast_to(rows, (vals.shape[0], 8)).reshape(vals.shape))
    idx = _first_matches(d.reshape(x.shape[0], -1), v.reshape(x.shape[0], 8))
    if rows is not None:
        idx[~np.asarray(rows).reshape(-1)] = 0  # partitions the mask leaves out are not searched
    set_result(c.out, _not_found(st, idx, c.out.dtype), rows)


def check_match_replace8(st, *, data, vals, imm, dst_idx=None, dtype=None, mask=None, **_):
    data = tile(st, data, "nc_match_replace8", "data")
    vals = tile(st, vals, "nc_match_replace8", "vals")
    c = Call("nisa.nc_match_replace8", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [data, vals]
    c.p.update(imm=imm, dst_idx=dst_idx)
    c.out = c.result = fresh(st, data.shape, resolve_dtype(st, dtype, data.dtype))
    if dst_idx is not None and st.trace_only:
        dst_idx.write(np.zeros(()))
    return c


def exec_match_replace8(st, c: Call) -> None:
    data, vals = c.ins
    rows = _row_mask(c.mask, data.shape)  # these instructions mask whole partitions
    dm = None if rows is None else np.broadcast_to(rows, (data.shape[0], free_size(data.shape))).reshape(data.shape)
    d = f32(data, dm).reshape(data.shape[0], -1).copy()
    vm = None if rows is None else np.broadcast_to(rows, (vals.shape[0], 8)).reshape(vals.shape)
    idx = _first_matches(d, f32(vals, vm).reshape(d.shape[0], 8))
    p, j = np.nonzero(idx >= 0)  # a value that does not occur replaces nothing
    d[p, idx[p, j]] = np.float32(c.p["imm"])
    set_result(c.out, d.reshape(data.shape), dm)
    dst = c.p["dst_idx"]
    if dst is not None:
        if rows is not None:
            idx[~np.asarray(rows).reshape(-1)] = 0
        dst.write(_not_found(st, idx, dst.dtype).reshape(dst.shape),
                  None if rows is None else np.broadcast_to(rows, (dst.shape[0], 8)).reshape(dst.shape))


_TARGET = re.compile(r"^\s*([A-Za-z_]\w*)\s*(\[[^\]]*\])?\s*=\s*[\w.]*loop_reduce\(")
# loop_reduce ops are the associative ALU ops (REFERENCE §3.7); numpy/nl reduction names map onto them
_LOOP_REDUCE_OPS = {"add": "add", "sum": "add", "subtract": "subtract", "multiply": "multiply", "prod": "multiply",
                    "max": "maximum", "amax": "maximum", "maximum": "maximum", "min": "minimum", "amin": "minimum",
                    "minimum": "minimum", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
                    "bitwise_xor": "bitwise_xor", "logical_and": "logical_and", "logical_or": "logical_or",
                    "logical_xor": "logical_xor"}


def check_loop_reduce(st, x, op, loop_indices=None, *, dtype=None, mask=None, **_):
    """nl.loop_reduce: the assignment target is also the right-hand operand of `op`.

    `b[...] = nl.loop_reduce(a, op)` returns a tile the assignment combines into b[...];
    `b = nl.loop_reduce(a, op)` names its target only in the source line, which is read here. A
    target that does not exist yet (the first iteration) starts as a copy of `a`.
    """
    x = tile(st, x, "loop_reduce", "x")
    name = resolve_op(st, _LOOP_REDUCE_OPS, op, "loop_reduce op")[1]
    fn = BINARY[name]
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename not in st.files:
        f = f.f_back
    m = _TARGET.match(linecache.getline(f.f_code.co_filename, f.f_lineno)) if f is not None else None
    c = Call("loop_reduce", "vector")
    c.mask = op_mask(st, mask)
    c.p["fn"] = fn
    dst = None
    if m and not m.group(2):
        dst = f.f_locals.get(m.group(1))
        if dst is not None and not isinstance(dst, Tensor):
            raise st.error("err_loop_reduce_target",
                           f"loop_reduce target '{m.group(1)}' is a {type(dst).__name__}, not a tile")
    if dst is None:  # a subscript target (the assignment combines) or a fresh name (the first value)
        c.ins = [x]
        c.out = c.result = fresh(st, x.shape, resolve_dtype(st, dtype, x.dtype))
        if m and m.group(2):
            c.out.reduce_op = fn
        return c
    c.ins = [x, dst]
    c.out = c.result = dst
    return c


def exec_loop_reduce(st, c: Call) -> None:
    if len(c.ins) == 1:
        set_result(c.out, f32(c.ins[0], c.mask), c.mask)
        return
    x, dst = c.ins
    dst.write(np.broadcast_to(c.p["fn"](f32(dst), lead_align(f32(x, c.mask), len(dst.shape))), dst.shape))


OPS = table(
    *[nl_reduction(n) for n in ("sum", "max", "min", "mean", "prod", "var", "all")],
    Op("nisa.tensor_reduce", check_tensor_reduce, exec_tensor_reduce, lambda st, c: max(MIN_II, free_size(c.ins[0].shape))),
    Op("nisa.tensor_partition_reduce", check_partition_reduce, exec_partition_reduce, cost_gpsimd),
    Op("nisa.tensor_scalar_reduce", check_tensor_scalar_reduce, exec_tensor_scalar_reduce, lambda st, c: cost_stream(st, c) + MIN_II),
    Op("nisa.bn_stats", check_bn_stats, exec_bn_stats, lambda st, c: free_size(c.ins[0].shape)),
    Op("nisa.bn_aggr", check_bn_aggr, exec_bn_aggr, lambda st, c: max(MIN_II, 13 * free_size(c.ins[0].shape) / 3)),
    Op("nisa.max8", check_max8, exec_max8, lambda st, c: free_size(c.ins[0].shape)),
    Op("loop_reduce", check_loop_reduce, exec_loop_reduce, cost_stream),
    Op("nisa.nc_find_index8", check_find_index8, exec_find_index8, lambda st, c: free_size(c.ins[0].shape)),
    Op("nisa.nc_match_replace8", check_match_replace8, exec_match_replace8, lambda st, c: free_size(c.ins[0].shape)),
)
