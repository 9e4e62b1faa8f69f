"""Data movement ops: DMA loads and stores, copies, assignment, views (REFERENCE §3.4); the other DMA
instructions are in `dma`."""

from __future__ import annotations

import math
import sys

import numpy as np

from evidence.nki import dtypes
from evidence.nki.access_pattern import start_of
from evidence.nki.alloc import HBM_KINDS, ONCHIP
from evidence.nki.dispatch import Call, settle_for
from evidence.nki.ops.base import (
    Op, check_partitions, cost_dma, cost_stream, f32, fresh, op_mask, resolve_dtype, set_result, table, tile,
    unshared, value,
)
from evidence.nki.indexing import full_mask
from evidence.nki.subscripts import index
from evidence.nki.tensor import Tensor

ANY = ONCHIP + HBM_KINDS


def _hbm(st, x, op: str, arg: str) -> Tensor:
    return tile(st, x, op, arg, HBM_KINDS)


def track_load(st, src: Tensor, mask) -> None:
    """Count bytes of an HBM tensor loaded more than once (per element, across the whole run)."""
    cov = src.alloc.lcov  # the boxes loaded so far (evidence.nki.coverage): most loads need no mask count
    if src.adv is None:
        lm = src.lmask
        if lm is None:
            return
        if mask is None:
            box = src.region() if cov is not None else None
            fresh = None if box is None else cov.count(box)
            if fresh is None:
                if cov is not None:
                    if box is None:
                        cov.irregular()
                    else:
                        cov.sync()  # the mask counts: bring it up to date first
                seen = np.count_nonzero(lm)
                lm[...] = True
            else:
                seen = lm.size - fresh
            if box is not None and fresh != 0:
                cov.record(box)  # marks lmask too
        else:
            if cov is not None:
                cov.irregular()
            m = full_mask(mask, lm.shape)
            seen = np.count_nonzero(lm & m)
            lm[...] |= m
    else:
        parent, idx, m, grid = src.locate(mask)
        if parent.lmask is None:
            return
        if cov is not None:
            cov.irregular()
        if m is not None:
            idx = tuple(np.broadcast_to(i, grid)[m] for i in idx)
        seen = np.count_nonzero(parent.lmask[idx])
        parent.lmask[idx] = True
    st.redundant_bytes += int(seen) * src.itemsize


def fit(st, v: np.ndarray | None, vshape, shape, op: str):
    """Shape a source to a destination: equal, same size (reshape), or a smaller broadcast source."""
    vshape, shape = tuple(vshape), tuple(shape)
    if vshape == shape:
        return v
    n = int(math.prod(vshape))
    if n == int(math.prod(shape)) and n > 1:
        return None if v is None else v.reshape(shape)
    # Index grids from a higher-rank mgrid leave trailing unit axes ([1, F, 1] for a [1, F] access):
    # try the source without them too.
    squeezed = vshape
    while len(squeezed) > len(shape) and squeezed[-1] == 1:
        squeezed = squeezed[:-1]
    for base in dict.fromkeys((vshape, squeezed)):
        for cand in (tuple(base) + (1,) * (len(shape) - len(base)), base):
            try:
                if len(cand) <= len(shape) and np.broadcast_shapes(cand, shape) == shape:
                    return None if v is None else np.broadcast_to(v.reshape(cand), shape)
            except ValueError:
                continue
    raise st.error(
        "err_store_dst_shape_smaller_than_other_shape",
        f"'{op}' destination {list(shape)} is smaller than (or does not match) the source {list(vshape)}",
    )


# --- load / store --------------------------------------------------------------------------

def oob_skip(st, view, mask: np.ndarray | None, mode) -> np.ndarray | None:
    """`mode=oob_mode.skip` on a load or store through run-time (indirect) indices: elements whose index falls
    outside the tensor are not moved, as the DMA skips them (REFERENCE §3.4 for `dma_copy`'s `oob_mode`; beta
    kernels pass it to `nl.load`/`nl.store`, such as the neuron-team MoE kernel's skipped weight loads, which then
    keep the destination's earlier contents). `mask` narrowed to the in-range elements; unchanged otherwise."""
    if mode is None or getattr(mode, "name", None) != "skip" and mode != 1 or view.adv is None or st.trace_only:
        return mask
    parent, idx, grid = view.adv
    inside = np.ones(grid, bool)
    for ix, dim in zip(idx, parent.shape):
        if isinstance(ix, np.ndarray):
            inside &= np.broadcast_to((ix >= 0) & (ix < dim), grid)
    if inside.all():
        return mask
    inside = inside.reshape(view.shape)
    return inside if mask is None else inside & full_mask(mask, view.shape)


def check_load(st, src, *, mask=None, dtype=None, mode=None, **_):
    src = _hbm(st, src, "load", "src")
    c = Call("load", "dma")
    check_partitions(st, src.shape, "load", "result")
    c.mask = oob_skip(st, src, op_mask(st, mask), mode)
    c.ins = [src]
    # a tile has a partition and a free axis: a 1-D slice loads as [P, 1], a single element as [1, 1]
    shape = tuple(src.shape) + (1,) * max(0, 2 - len(src.shape))
    c.out = c.result = fresh(st, shape, resolve_dtype(st, dtype, src.dtype))
    track_load(st, src, c.mask)
    return c


def exec_load(st, c: Call) -> None:
    v = unshared(c.ins[0].read(c.mask), c.ins[0])
    set_result(c.out, v.reshape(c.out.shape) if v.shape != c.out.shape else v, c.mask)


def check_store(st, dst, value=None, *, mask=None, mode=None, **kw):
    if value is None:
        value = kw.get("data")
    dst = _hbm(st, dst, "store", "dst")
    c = Call("store", "dma")
    c.mask = oob_skip(st, dst, op_mask(st, mask), mode)
    if isinstance(value, Tensor):
        tile(st, value, "store", "value", ONCHIP)
        fit(st, None, value.shape, dst.shape, "store")
        c.ins = [value]
    c.p["v"] = value
    c.out = dst
    if dst.alloc.param >= 0 and dst.alloc.param not in st.param_writes:
        st.param_writes[dst.alloc.param] = st.where()
    if st.trace_only:
        dst.write(np.zeros(()), c.mask)  # provenance and dependency tracking still run
    return c


def exec_store(st, c: Call) -> None:
    v, dst = c.p["v"], c.out
    mask = c.mask
    if isinstance(v, Tensor) and v.alloc.writer is not None and mask is None and v.valid is None:
        arr = v.read_pending()  # values a pending job produces (a copy out of PSUM): the store joins the jobs
        if arr is not None and dst.write_pending(fit(st, arr, v.shape, dst.shape, "store"), v.alloc):
            return
    if st.pipeline.busy:
        settle_for(st, c)
    if isinstance(v, Tensor):
        # read only the elements the store writes (a masked result's masked-out part is never stored)
        rm = v.valid
        if mask is not None and math.prod(v.shape) == math.prod(dst.shape):
            # a [P, 1] value into a 1-D access of P elements (`out[i_f + i_p + 1]`) holds the same elements in order
            m = full_mask(mask, dst.shape).reshape(v.shape)
            rm = m if rm is None else (m & rm)
        val = v.read(rm)
        if v.valid is not None:
            # the value's valid region has the value's shape: shape it to the destination as the value is
            # (a [P, F] tile stored into a [P, F, G] access broadcasts), or `&` fails inside the simulator
            valid = fit(st, v.valid, v.shape, dst.shape, "store")
            mask = valid if mask is None else (full_mask(mask, dst.shape) & valid)
    else:
        val = value(v)
    arr = fit(st, val, np.shape(val), dst.shape, "store")
    dst.write(arr, mask)


def check_load_transpose2d(st, src, *, mask=None, dtype=None, **_):
    src = _hbm(st, src, "load_transpose2d", "src")
    if len(src.shape) != 2:
        raise st.error("err_exceed_max_supported_dimension", f"load_transpose2d expects a 2-D source, got {list(src.shape)}")
    c = Call("load_transpose2d", "dma")
    shape = (src.shape[1], src.shape[0])
    check_partitions(st, shape, "load_transpose2d", "result")
    c.mask = op_mask(st, mask)
    c.ins = [src]
    c.out = c.result = fresh(st, shape, resolve_dtype(st, dtype, src.dtype))
    track_load(st, src, None)
    return c


def exec_load_transpose2d(st, c: Call) -> None:
    set_result(c.out, c.ins[0].read().T, c.mask)


# --- on-chip copies ------------------------------------------------------------------------

def check_copy(st, src=None, *, mask=None, dtype=None, engine=None, x=None, **_):
    src = tile(st, src if src is not None else x, "copy", "src")
    c = Call("copy", "vector")
    c.mask = op_mask(st, mask)
    c.ins = [src]
    c.out = c.result = fresh(st, src.shape, resolve_dtype(st, dtype, src.dtype))
    return c


def exec_copy(st, c: Call) -> None:
    src = c.ins[0]
    if (src.alloc.writer is not None and c.into is None and c.mask is None and src.valid is None
            and _copy_job(st, c, src)):
        return
    if st.pipeline.busy:
        settle_for(st, c)
    v = unshared(src.read(c.mask), src)
    set_result(c.out, v if dtypes.is_int(c.out.dtype) and dtypes.is_int(src.dtype) else dtypes.to_f32(v), c.mask)


def _copy_job(st, c: Call, src: Tensor) -> bool:
    """A copy of values pending TensorE jobs still produce (a PSUM accumulation group copied out to SBUF)
    as a job behind them, so the kernel's Python runs ahead; held, since the assignment binding the
    result usually follows and joins the same job. False when the values are needed now."""
    v = src.read_pending()
    if v is None:
        return False
    out, dt = c.out, c.out.dtype
    buf = np.empty(out.shape, dtypes.storage(dt))
    out.alloc.data = out.data = buf
    out.alloc.origin = st.read_origin
    pipeline = st.pipeline
    copy = pipeline.copy = PendingCopy(v, buf, dt, dtypes.is_int(dt) and dtypes.is_int(src.dtype))
    pipeline.run(copy.run, reads=(src.alloc,), writes=(out.alloc,), hold=True)
    copy.job, copy.step = pipeline.held, len(pipeline.held.steps) - 1
    return True


class PendingCopy:
    """The job step of a copy out of pending values (`_copy_job`): exec_copy's values into the result's
    storage, or, when an assignment binds the result (`v4[...] = nl.copy(psum)`, the usual case) while
    the step is still open (`open_in`), straight into that destination (`deliver_to`). The result's own
    storage is then filled only if something still holds it when the step runs."""

    __slots__ = ("v", "buf", "dt", "keep_int", "job", "step", "dst")

    def __init__(self, v: np.ndarray, buf: np.ndarray, dt, keep_int: bool) -> None:
        self.v, self.buf, self.dt, self.keep_int = v, buf, dt, keep_int
        self.job, self.step = None, -1
        self.dst = None  # (destination array, its dtype, whether to cast)

    def open_in(self, pipeline) -> bool:
        job = pipeline.held
        return job is not None and job is self.job and len(job.steps) - 1 == self.step and self.dst is None

    def deliver_to(self, dst: np.ndarray, dt, convert: bool) -> None:
        self.dst = (dst, dt, convert)

    def run(self) -> None:
        v, buf, dst = self.v, self.buf, self.dst
        self.v = self.buf = self.dst = None  # the arrays go with the step
        r = dtypes.cast(v if self.keep_int else dtypes.to_f32(v), self.dt)
        r = r.reshape(buf.shape) if r.shape != buf.shape else r
        del v
        if dst is None or sys.getrefcount(buf) > 2:  # held beyond `buf` and the call: the result tile is used
            buf[...] = r
        if dst is not None:
            arr, dt, convert = dst
            arr[...] = dtypes.cast(r, dt) if convert else r


def check_tensor_copy(st, src, *, mask=None, dtype=None, engine=None, **_):
    c = check_copy(st, src, mask=mask, dtype=dtype)
    c.op = "nisa.tensor_copy"
    if engine is not None and int(engine) == 3 and src.alloc.buffer == "psum":
        raise st.error("err_unsupported_memory", "'tensor_copy' on GpSimd cannot access PSUM")
    c.engine = {2: "scalar", 3: "gpsimd"}.get(int(engine or 0), "vector")
    return c


def check_copy_dynamic_src(st, src, *, mask=None, dtype=None, engine=None, **_):
    """`tensor_copy_dynamic_src(src[..., idx_tile[0, j] + i_f])`: an on-chip copy whose source offset is a
    runtime value held in SBUF (the subscript reads it); costs the dynamic-offset minimum of ~600 cycles."""
    c = check_copy(st, src, mask=mask, dtype=dtype)
    c.op, c.engine = "nisa.tensor_copy_dynamic_src", {2: "scalar", 3: "gpsimd"}.get(int(engine or 0), "vector")
    return c


def check_copy_dynamic_dst(st, *, dst, src, mask=None, dtype=None, engine=None, **_):
    dst = tile(st, dst, "tensor_copy_dynamic_dst", "dst")
    src = tile(st, src, "tensor_copy_dynamic_dst", "src")
    c = Call("nisa.tensor_copy_dynamic_dst", {2: "scalar", 3: "gpsimd"}.get(int(engine or 0), "vector"))
    c.mask = op_mask(st, mask)
    fit(st, None, src.shape, dst.shape, "tensor_copy_dynamic_dst")
    c.ins, c.out = [src], dst
    if st.trace_only:
        dst.write(np.zeros(()), c.mask)
    return c


def exec_copy_dynamic_dst(st, c: Call) -> None:
    src, dst = c.ins[0], c.out
    dst.write(fit(st, src.read(c.mask), src.shape, dst.shape, "tensor_copy_dynamic_dst"), c.mask)


def cost_dynamic_copy(st, c: Call) -> float:
    return max(600.0, cost_stream(st, c))


def check_broadcast_to(st, src, *args, shape=None, dtype=None, **kw):
    # beta: broadcast_to(src, *, shape); nki 0.3+: broadcast_to(x, shape, dtype=None)
    if args:
        if st.dialect != "standalone" or len(args) > 2:
            raise st.error("err_broadcast_to_arguments", "nl.broadcast_to takes the source tile and shape= (a keyword "
                           "argument in the beta dialect; nki 0.3+ also takes shape and dtype positionally)")
        shape, dtype = (args + (dtype,))[:2]
    shape = kw.get("target_shape", shape)
    if shape is None:
        raise st.error("err_broadcast_to_arguments", "nl.broadcast_to needs the target shape")
    shape = tuple(shape)
    src = tile(st, src, "broadcast_to", "src", ANY)
    c = Call("broadcast_to", "tensor" if src.shape[0] != shape[0] else None)
    fit(st, None, src.shape, shape, "broadcast_to")
    check_partitions(st, shape, "broadcast_to", "result")
    c.ins = [src]
    out_dtype = src.dtype if dtype is None else dtypes.resolve(dtype)
    c.out = c.result = fresh(st, shape, out_dtype, src.alloc.buffer if src.alloc.buffer in ONCHIP else "sbuf")
    return c


def exec_broadcast_to(st, c: Call) -> None:
    src = c.ins[0]
    set_result(c.out, fit(st, unshared(src.read(), src), src.shape, c.out.shape, "broadcast_to"))


# --- assignment: t[key] = value --------------------------------------------------------------

def _layout(x: np.ndarray) -> list:
    """(size, stride) per axis, unit axes left out: equal for two arrays that walk the same elements in the same order."""
    return [(n, st) for n, st in zip(x.shape, x.strides) if n != 1]


def same_view(a: Tensor, b: Tensor) -> bool:
    """Two views of the same elements of one allocation, in the same order (writing one onto the other moves nothing)."""
    if a.alloc is not b.alloc or a.shape != b.shape:
        return False
    ca, cb = a.cut, b.cut
    if ca is not None and cb is not None and ca[0] is cb[0] and ca[1] is cb[1] and ca[2] == cb[2]:
        return True  # the same subscript structure and starts, cut from the same array
    if a.adv is None and b.adv is None:
        x, y = a.data, b.data
        return isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and start_of(x, y) == 0 and _layout(x) == _layout(y)
    if a.adv is None or b.adv is None or a.adv[0] is not b.adv[0] or len(a.adv[1]) != len(b.adv[1]):
        return False
    return all(np.array_equal(x, y) for x, y in zip(a.adv[1], b.adv[1]))


def check_assign(st, t, key, v):
    view = index(t, key)
    c = Call("assign", None)
    c.out = view
    c.p["v"] = v
    if isinstance(v, Tensor):
        if same_view(v, view):
            c.p["same"] = True  # `t[idx] += x` comes back as t[idx] = t[idx]: already written in place
            return c
        fit(st, None, v.shape, view.shape, "assign")
        src_hbm, dst_hbm = v.alloc.buffer in HBM_KINDS, view.alloc.buffer in HBM_KINDS
        if src_hbm or dst_hbm:
            c.op, c.engine = ("store" if dst_hbm else "load"), "dma"
            if src_hbm:
                track_load(st, v, None)
        elif not v.fresh:
            c.op, c.engine = "tensor_copy", "vector"
        if c.engine is not None:
            c.ins = [v]
        if view.alloc.buffer in ONCHIP:
            check_partitions(st, view.shape, "assign", "destination")
    else:
        c.op, c.engine = "memset", "vector"
    if view.alloc.param >= 0 and view.alloc.param not in st.param_writes:
        st.param_writes[view.alloc.param] = st.where()
    if st.trace_only:
        view.write(np.zeros(()), v.valid if isinstance(v, Tensor) else None)
    return c


def exec_assign(st, c: Call) -> None:
    view, v = c.out, c.p["v"]
    if c.p.get("same"):
        return
    if isinstance(v, Tensor) and v.alloc.writer is not None and v.valid is None and v.reduce_op is None:
        arr = v.read_pending()  # values a pending job produces: the copy into `view` joins the jobs
        copy = st.pipeline.copy
        producer = (copy if copy is not None and copy.buf is arr and arr.shape == tuple(view.shape)
                    and copy.open_in(st.pipeline) else None)
        if arr is not None and view.write_pending(fit(st, arr, v.shape, view.shape, "assign"), v.alloc, producer):
            v.fresh = False
            return
    if st.pipeline.busy:
        settle_for(st, c)
    if isinstance(v, Tensor):
        arr = fit(st, v.read(v.valid), v.shape, view.shape, "assign")
        if v.reduce_op is not None:  # dst[...] = nl.loop_reduce(x, op): dst = op(dst, x)
            arr = v.reduce_op(f32(view), dtypes.to_f32(arr))
        view.write(arr, v.valid)
        v.fresh = False
    else:
        view.write(np.asarray(v, dtype=np.float32 if isinstance(v, float) else None))


# --- views and casts (tensor methods; bookkeeping, no instruction except astype) -------------

def check_reshape(st, t, shape):
    if isinstance(shape, int):
        shape = (shape,)
    c = Call("reshape", None)
    try:
        data = t.data.reshape(tuple(shape))
    except (ValueError, AttributeError) as exc:
        raise st.error("err_invalid_reshape", f"cannot reshape {list(t.shape)} into {list(shape)}: {exc}") from None
    if not np.shares_memory(data, t.data) and data.size > 1 and not st.trace_only:
        raise st.error("err_invalid_reshape", f"reshape of a strided view {list(t.shape)} would copy")
    r = Tensor(t.alloc, data, data.shape, 0,
               None if t.wmask is None else t.wmask.reshape(data.shape),
               None if t.stamp is None else t.stamp.reshape(data.shape),
               None if t.lmask is None else t.lmask.reshape(data.shape))
    r.dtype = t.dtype  # a reshaped dtype view keeps its dtype
    c.result = r
    return c


def check_view(st, t, dt):
    c = Call("view", None)
    d = dtypes.storage(dtypes.resolve(dt))
    data = t.data.view(d) if not st.trace_only else np.broadcast_to(np.zeros((), d), t.shape[:-1] + (t.shape[-1] * t.itemsize // d.itemsize,))
    r = Tensor(t.alloc, data, data.shape, t.pdim)
    r.dtype = dtypes.resolve(dt)
    r.reinterpreted = True
    c.result = r
    return c


def check_astype(st, t, dt):
    c = check_copy(st, t, dtype=dt)
    c.op = "astype"
    return c


def check_expand_dims(st, data, axis):
    t = data
    c = Call("expand_dims", None)
    data = np.expand_dims(t.data, axis)
    c.result = Tensor(t.alloc, data, data.shape, t.pdim,
                      None if t.wmask is None else np.expand_dims(t.wmask, axis))
    c.result.dtype = t.dtype
    return c


def check_stream_shuffle(st, src, dst, shuffle_mask, *, dtype=None, mask=None, **_):
    src = tile(st, src, "nc_stream_shuffle", "src")
    dst = tile(st, dst, "nc_stream_shuffle", "dst")
    sm = [int(m) for m in shuffle_mask]
    if len(sm) > 32 or any(not (0 <= m < 32 or m == 255) for m in sm):
        raise st.error("err_invalid_shuffle_mask", f"shuffle_mask needs up to 32 entries in 0..31 or 255, got {sm}")
    c = Call("nisa.nc_stream_shuffle", "vector")
    c.ins, c.out = [src], dst
    c.p["sm"] = sm
    if st.trace_only:
        dst.write(np.zeros(()))
    return c


def exec_stream_shuffle(st, c: Call) -> None:
    """Within each 32-partition quadrant, dst[i] = src[mask[i]]; 255 leaves dst[i] unchanged."""
    src, dst = c.ins[0].read(), c.out
    out = np.array(dst.read(), copy=True)
    for q0 in range(0, min(src.shape[0], out.shape[0]), 32):
        for i, m in enumerate(c.p["sm"]):
            if m != 255 and q0 + i < out.shape[0] and q0 + m < src.shape[0]:
                out[q0 + i] = src[q0 + m]
    dst.write(out)


OPS = table(
    Op("nisa.nc_stream_shuffle", check_stream_shuffle, exec_stream_shuffle, cost_stream),
    Op("load", check_load, exec_load, cost_dma),
    Op("store", check_store, exec_store, cost_dma, concurrent=True),
    Op("load_transpose2d", check_load_transpose2d, exec_load_transpose2d, cost_dma),
    Op("copy", check_copy, exec_copy, cost_stream, concurrent=True),
    Op("nisa.tensor_copy", check_tensor_copy, exec_copy, cost_stream, concurrent=True),
    Op("nisa.tensor_copy_dynamic_src", check_copy_dynamic_src, exec_copy, cost_dynamic_copy),
    Op("nisa.tensor_copy_dynamic_dst", check_copy_dynamic_dst, exec_copy_dynamic_dst, cost_dynamic_copy),
    Op("broadcast_to", check_broadcast_to, exec_broadcast_to, cost_stream),
    Op("assign", check_assign, exec_assign, lambda st, c: cost_dma(st, c) if c.engine == "dma" else cost_stream(st, c),
       concurrent=True),
    Op("reshape", check_reshape, None, None),
    Op("view", check_view, None, None),
    Op("astype", check_astype, exec_copy, cost_stream),
    Op("expand_dims", check_expand_dims, None, None),
)
