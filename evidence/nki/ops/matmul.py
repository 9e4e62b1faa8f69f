"""TensorE ops: matmuls into fp32 PSUM and transposes (REFERENCE §2 TC#3/LC#1, §3.5)."""

from __future__ import annotations

import math

import numpy as np

from evidence.nki import dtypes
from evidence.nki.dialect import BETA
from evidence.nki.dispatch import Call
from evidence.nki.indexing import full_mask
from evidence.nki.product_batch import ProductBatch, capacity
from evidence.nki.ops.base import (
    MIN_II, PMAX, Op, check_partitions, f32, free_size, fresh, op_mask, resolve_dtype, set_result, table, tile,
)

STATIONARY_FMAX = 128
MOVING_FMAX = 512  # one fp32 PSUM bank (v2/v3)
MOVING_FMAX_V4 = 4096  # REFERENCE §2: NeuronCore-v4 streams up to 4096 moving columns into an fp32 dst


def moving_fmax(st) -> int:
    return MOVING_FMAX_V4 if st.nc_version >= 4 else MOVING_FMAX
_FP32ISH = frozenset(("float32", "tfloat32"))


def _operand(st, x, op: str, arg: str):
    """A TensorE operand. TensorE reads SBUF (REFERENCE §3.5), but the beta compiler also takes a PSUM tile
    there and moves it to SBUF itself: nki-samples' flash-attention backward, which its tests run on the
    simulator and on hardware, feeds `nc_transpose` results (PSUM) straight into `nc_matmul`. Simulated as
    read, with a low finding for the copy it costs; nki 0.3+ keeps the documented rule."""
    t = tile(st, x, op, arg, ("sbuf", "psum") if st.dialect == BETA else ("sbuf",))
    if t.alloc.buffer == "psum":
        st.finding("matmul_operand_in_psum", f"'{arg}' of '{op}' {list(t.shape)} is a PSUM tile: TensorE reads "
                   "SBUF, so the compiler copies it there first (an extra instruction per use; copy it once with "
                   "nl.copy, or transpose into SBUF)", "low")
    return t


def _limit(st, x, dim: int, limit: int, op: str, arg: str, size: int | None = None) -> None:
    n = x.shape[dim] if size is None else size
    if n > limit:
        raise st.error(
            "err_size_of_dimension_exceed_arch_limit",
            f"size of dimension {dim} in '{arg}{list(x.shape)}' of '{op}' ({n}) exceed architecture limitation of {limit}",
        )


def _plan(st, op: str, stat, mov, kt: int, m: int, n_shape: tuple, k_mov: int) -> Call:
    if kt != k_mov:
        raise st.error(
            "err_num_partition_mismatch",
            f"'{op}' contraction sizes differ: stationary K={kt} vs moving K={k_mov} (K lives on the partition axis)",
        )
    names = {dtypes.name(stat.dtype), dtypes.name(mov.dtype)}
    if names & _FP32ISH and not names <= _FP32ISH:
        st.finding(
            "matmul_mixed_fp32_dtypes",
            f"'{op}' mixes {sorted(names)}: if either operand is fp32/tf32 the other must be too", "medium",
        )
    c = Call(op, "tensor")
    c.ins = [stat, mov]
    c.out = c.result = fresh(st, (m,) + tuple(n_shape), dtypes.float32, "psum")
    n = int(math.prod(n_shape))
    c.flops = 2 * kt * m * n
    c.partitions = kt
    c.elements = m * n
    c.p["fp32"] = bool(names & _FP32ISH)
    return c


def _double_row(st, s, m, perf_mode) -> Call:
    """v3 fp8 double-row mode: stationary [K, 2, M], moving [K, 2, N]; contracts over K and the 2."""
    if st.nc_version < 3:
        raise st.error("err_unsupported_perf_mode", f"perf_mode={perf_mode!r} needs trn2 (NeuronCore-v3)")
    for t, arg, limit in ((s, "stationary", STATIONARY_FMAX), (m, "moving", MOVING_FMAX)):
        if len(t.shape) != 3 or t.shape[1] != 2:
            raise st.error("err_invalid_double_row_shape", f"double-row '{arg}' must be [K, 2, F], got {list(t.shape)}")
        if not dtypes.name(t.dtype).startswith("float8"):
            raise st.error("err_unsupported_dtype", f"double-row '{arg}' must be fp8, got {dtypes.name(t.dtype)}")
        _limit(st, t, 2, limit, "nc_matmul", arg)
    c = _plan(st, "nisa.nc_matmul", s, m, s.shape[0], s.shape[2], (m.shape[2],), m.shape[0])
    c.flops *= 2
    c.p["double_row"] = True
    return c


def check_nc_matmul(st, stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False,
                    is_transpose=False, tile_position=(), tile_size=(), mask=None, perf_mode=None, accumulate=False,
                    **_):
    s = _operand(st, stationary, "nc_matmul", "stationary")
    m = _operand(st, moving, "nc_matmul", "moving")
    if perf_mode is not None and "double_row" in str(getattr(perf_mode, "name", perf_mode)):
        c = _double_row(st, s, m, perf_mode)
        c.mask = op_mask(st, mask)
        c.p["transpose_x"] = True
        return c
    _limit(st, s, 1, STATIONARY_FMAX, "nc_matmul", "stationary", free_size(s.shape))
    _limit(st, m, 1, moving_fmax(st), "nc_matmul", "moving", free_size(m.shape))
    c = _plan(st, "nisa.nc_matmul", s, m, s.shape[0], free_size(s.shape), tuple(m.shape[1:]), m.shape[0])
    c.mask = op_mask(st, mask)
    c.p["transpose_x"] = True
    c.p["accumulate"] = accumulate  # nki 0.3+ into a PSUM dst: True adds, False overwrites, None decides per element
    # NeuronCore-v3+ has a transpose mode that moves data bit-exactly (REFERENCE §3.5: NaN/Inf stay in their element);
    # on v2 the transpose is a real matmul with the identity, so NaN spreads through the result
    c.p["transpose_mode"] = bool(is_transpose) and st.nc_version >= 3
    _operand_masks(c)
    return c


def check_matmul(st, x, y, *, transpose_x=False, mask=None, **_):
    x = _operand(st, x, "matmul", "x")
    y = _operand(st, y, "matmul", "y")
    # TensorE flattens the free axes of both operands: x [P, a, b] is [P, a*b]
    _limit(st, x, 1, STATIONARY_FMAX, "matmul", "x", free_size(x.shape))
    _limit(st, y, 1, moving_fmax(st), "matmul", "y", free_size(y.shape))
    k, mm = (x.shape[0], free_size(x.shape)) if transpose_x else (free_size(x.shape), x.shape[0])
    c = _plan(st, "matmul", x, y, k, mm, tuple(y.shape[1:]), y.shape[0])
    c.mask = op_mask(st, mask)
    c.p["transpose_x"] = transpose_x
    _operand_masks(c)
    return c


def _operand_masks(c: Call) -> None:
    """Operand masking (x[i_f < 64]): masked-out operand elements take no part; output rows/columns
    that no valid element reaches are not computed (left untouched by an accumulation)."""
    x, y = c.ins
    if x.valid is None and y.valid is None:
        return
    if c.mask is not None and any(_same_predicate(c.mask, t) for t in (x, y)):
        # `nc_matmul(w[..., i_m][i_m < M], v, mask=(i_m < M))`: the instruction mask repeats an operand's predicate
        # (over that operand's index, here the stationary's free axis: the output's rows). It selects the same
        # elements, so the operand masks alone decide; aligned with the output it would cut columns instead.
        c.mask = None
    xv = np.ones(x.shape, bool) if x.valid is None else x.valid
    xv = xv.reshape(x.shape[0], -1)
    xv = xv if c.p["transpose_x"] else xv.T  # [K, M]
    yv = (np.ones(y.shape, bool) if y.valid is None else y.valid).reshape(y.shape[0], -1)
    # a contraction row (K) masked out of either operand takes no part: the other operand's row is not read
    k = xv.any(axis=1) & yv.any(axis=1)
    xv, yv = xv & k[:, None], yv & k[:, None]
    c.p["xv"], c.p["yv"] = xv, yv
    out_valid = (xv.any(axis=0)[:, None] & yv.any(axis=0)[None, :]).reshape(c.out.shape)
    c.mask = out_valid if c.mask is None else (np.broadcast_to(c.mask, out_valid.shape) & out_valid)


def _same_predicate(mask: np.ndarray, t) -> bool:
    """`mask` is the predicate that masks operand `t` (`t = x[pred]`), aligned with `t` as its own mask was."""
    if t.valid is None:
        return False
    try:
        return bool(np.array_equal(full_mask(mask, t.shape), t.valid))
    except Exception:  # a mask that does not fit the operand
        return False


def exec_matmul(st, c: Call) -> None:
    x, y = c.ins
    plain = not (c.p.get("double_row") or c.p.get("transpose_mode") or c.mask is not None or "xv" in c.p
                 or x.valid is not None or y.valid is not None)
    if plain and (c.into is None or _fusable(c.into)):
        _matmul_job(st, c, x, y)
        return
    st.pipeline.settle(reads=(x.alloc, y.alloc), writes=(c.out.alloc,) + ((c.into.alloc,) if c.into else ()))
    if c.p.get("double_row"):
        r = np.einsum("kjm,kjn->mn", f32(x, x.valid), f32(y, y.valid), optimize=True)
        set_result(c.out, r.astype(np.float32), c.mask)
        return
    xv, yv = c.p.get("xv"), c.p.get("yv")
    if xv is not None:  # masked-out operand elements, and contraction rows the other operand masks out, are not read
        a = f32(x, (xv if c.p["transpose_x"] else xv.T).reshape(x.shape)).reshape(x.shape[0], -1)
        b = f32(y, yv.reshape(y.shape))
    else:
        a = f32(x, x.valid)
        b = f32(y, y.valid)
    a = a.reshape(x.shape[0], -1)
    a = a if c.p["transpose_x"] else a.T  # stationary [K, M]
    b = b.reshape(y.shape[0], -1)
    if "xv" in c.p:
        a = np.where(c.p["xv"], a, np.float32(0))
        b = np.where(c.p["yv"], b, np.float32(0))
    sel = _selection(b) if c.p.get("transpose_mode") else None
    # transpose mode with a 0/1 selection (identity) as moving: each output element is one stationary element, so an
    # undefined (NaN) element of the stationary stays in its own place instead of spreading along its row
    r = np.ascontiguousarray(a[sel].T) if sel is not None else a.T @ b  # else fp32 products and accumulation, as in PSUM
    r.shape = c.out.shape  # in place: the result owns its data, so set_result need not copy it
    set_result(c.out, r, c.mask)


def _selection(b: np.ndarray):
    """For a moving operand [K, N] whose every column holds a single 1 and zeros elsewhere (an identity or
    permutation), the row each column selects; None otherwise."""
    ones = b == 1
    if not (ones.sum(axis=0) == 1).all() or not (ones | (b == 0)).all():
        return None
    return ones.argmax(axis=0)


def _fusable(dst) -> bool:
    """A dst-first matmul the pipeline job can deliver itself: an fp32 PSUM view of plain memory."""
    return dst.adv is None and dst.stamp is None and dst.data.dtype == np.float32


def _matmul_job(st, c: Call, x, y) -> None:
    """An unmasked matmul: operands read (and undefined reads recorded) now, the products computed by
    a pipeline job, into the result's storage (allocated here so the kernel can index it at once) or,
    for a dst-first call, straight into the PSUM destination."""
    xv, yv = x.read(), y.read()
    transpose_x, kx, ky = c.p["transpose_x"], x.shape[0], y.shape[0]

    def product(out=None) -> np.ndarray:
        a = dtypes.to_f32(xv).reshape(kx, -1)
        a = a if transpose_x else a.T  # stationary [K, M]
        b = dtypes.to_f32(yv).reshape(ky, -1)
        return np.matmul(a.T, b, out=out)  # fp32 products and accumulation, as in PSUM

    batched = st.pipeline.queue is not None
    if c.into is None and batched:
        _batched_product(st, c, x, y, xv, yv)
        return
    if c.into is None:
        out = c.out
        buf = np.empty(out.shape, np.float32)
        out.alloc.data = out.data = buf
        out.alloc.origin = st.read_origin
        # held: a PSUM `+=` of this result usually follows, and joins this job
        st.pipeline.run(lambda: product(buf.reshape(buf.shape[0], -1)), reads=(x.alloc, y.alloc), writes=(out.alloc,),
                        hold=True)
        return
    dst = c.into
    acc = _accumulation_mask(st, dst, c.p.get("accumulate", False))
    view = dst.data
    if (acc is None or acc is False) and batched:
        _batched_product(st, c, x, y, xv, yv, into=(dst, acc is None))
        c.p["delivered"] = True
        return

    def deliver() -> None:
        r = product().reshape(view.shape)
        if acc is None:
            np.add(view, r, out=view)
        elif acc is False:
            view[...] = r
        else:
            defined, elsewhere = acc
            np.copyto(view, np.where(defined, view + r, r if elsewhere is None else elsewhere))

    st.pipeline.run(deliver, reads=(x.alloc, y.alloc), writes=(dst.alloc,))
    c.p["delivered"] = True


def _batched_product(st, c: Call, x, y, xv: np.ndarray, yv: np.ndarray, into=None) -> None:
    """A matmul in the open product batch, which the next matmuls of the same layout (and the PSUM `+=`
    of each result) join, run as one job. Its result gets storage of its own; or, for a dst-first call,
    `into` = (dst, add): the product is added into dst (add False: written over it)."""
    pipeline, out = st.pipeline, c.out
    key = (xv.shape, xv.dtype, xv.strides, yv.shape, yv.dtype, yv.strides, c.p["transpose_x"], out.shape)
    batch = pipeline.batch
    if batch is None or not batch.accepts(pipeline, key, x, y):
        pipeline.submit()  # the open batch (or whatever job is held) goes to the workers first
        batch = pipeline.batch = ProductBatch(key, out.shape, capacity(4 * out.size), c.p["transpose_x"])
    if into is None:
        buf = np.empty(out.shape, np.float32)  # pages untouched unless the job delivers into it
        batch.add_product(xv, yv, buf)
        out.alloc.data = out.data = buf
        out.alloc.origin = st.read_origin
        written = out.alloc
    else:
        dst, add = into
        batch.add_product(xv, yv, None)
        batch.adds.append((dst.data, batch.count, add))
        written = dst.alloc
    if batch.job is None:
        pipeline.run(batch.run, reads=(x.alloc, y.alloc), writes=(written,), hold=True)
        batch.job, batch.step = pipeline.held, len(pipeline.held.steps) - 1
    else:
        pipeline.run(None, reads=(x.alloc, y.alloc), writes=(written,), hold=True, merge=True)


def _accumulation_mask(st, dst, accumulate):
    """Where a matmul into `dst` adds (None: everywhere, False: nowhere, else (where, what goes
    elsewhere: the product or NaN)), decided now, in program order; dst counts as written from here on."""
    defined = dst.defined_mask()
    if accumulate is False:
        mode = False
    elif defined is None:
        mode = None  # every element holds a value: add
    elif accumulate is None:
        # the first matmul into an element overwrites it (all of them, into a fresh allocation)
        mode = (np.array(defined), None) if defined.any() else False
    else:
        dst.read()  # accumulating onto never-written PSUM is undefined: record the read, NaN where it happens
        mode = (np.array(defined), np.float32(np.nan))
    if st.read_origin is not None and dst.alloc.origin is None:
        dst.alloc.origin = st.read_origin
    dst.mark_written()
    return mode


def cost_matmul(st, c: Call) -> float:
    x, y = c.ins
    m = c.out.shape[0]
    n = free_size(c.out.shape) if len(c.out.shape) > 1 else 1
    cycles = max(min(64, m), n) * (4 if c.p["fp32"] else 1)
    if not c.p["transpose_x"]:
        cycles += max(x.shape[0], min(64, free_size(x.shape)))  # the implicit TensorE transpose of x
    return float(cycles)


def check_transpose(st, x, *, dtype=None, mask=None, **_):
    x = tile(st, x, "transpose", "x")
    if len(x.shape) not in (1, 2):
        raise st.error("err_exceed_max_supported_dimension", f"'transpose' takes a 2-D tile, got {list(x.shape)}")
    # a reduction's [P] result (no keepdims) acts as [P, 1] (REFERENCE §9.1): its transpose is [1, P]
    f = x.shape[1] if len(x.shape) == 2 else 1
    _limit(st, x, 1, PMAX, "transpose", "x", f)
    c = Call("transpose", "tensor")
    c.mask = op_mask(st, mask)
    c.ins = [x]
    c.out = c.result = fresh(st, (f, x.shape[0]), resolve_dtype(st, dtype, x.dtype))
    return c


def check_nc_transpose(st, data, *, mask=None, dtype=None, engine=None, **_):
    x = tile(st, data, "nc_transpose", "data")
    p, f = x.shape[0], free_size(x.shape)
    eng = int(engine or 0)
    if eng == 0:
        eng = 5 if p <= 32 and f <= 32 else 1
    limit = 32 if eng == 5 else PMAX
    _limit(st, x, 0, limit, "nc_transpose", "data")
    _limit(st, x, 1, limit, "nc_transpose", "data", f)
    c = Call("nisa.nc_transpose", "vector" if eng == 5 else "tensor")
    c.mask = op_mask(st, mask)
    c.ins = [x]
    shape = (f, p)
    check_partitions(st, shape, "nc_transpose", "result")
    c.out = c.result = fresh(st, shape, resolve_dtype(st, dtype, x.dtype), "sbuf" if eng == 5 else "psum")
    return c


def exec_transpose(st, c: Call) -> None:
    x = c.ins[0]
    set_result(c.out, f32(x).reshape(x.shape[0], -1).T, c.mask)


OPS = table(
    Op("nisa.nc_matmul", check_nc_matmul, exec_matmul, cost_matmul, concurrent=True),
    Op("matmul", check_matmul, exec_matmul, cost_matmul, concurrent=True),
    Op("transpose", check_transpose, exec_transpose, lambda st, c: max(c.ins[0].shape[0], min(64, free_size(c.ins[0].shape)))),
    Op("nisa.nc_transpose", check_nc_transpose, exec_transpose,
       lambda st, c: max(c.ins[0].shape[0], min(64, free_size(c.ins[0].shape))) if c.engine == "tensor" else max(MIN_II, free_size(c.ins[0].shape))),
)
