"""DMA engine instructions beyond load and store: dma_copy (with read-modify-write), dma_compute,
dma_transpose, atomic_rmw (REFERENCE §3.4)."""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes
from evidence.nki.alloc import HBM_KINDS
from evidence.nki.dispatch import Call
from evidence.nki.indexing import full_mask
from evidence.nki.ops.base import (
    Op, check_partitions, cost_dma, f32, fresh, lead_align, op_mask, resolve_dtype, resolve_op, set_result, table,
    tile,
)
from evidence.nki.ops.memory import ANY, fit, oob_skip, same_view, track_load
from evidence.nki.tensor import Tensor

def check_dma_copy(st, *args, dst=None, src=None, mask=None, dst_rmw_op=None, oob_mode=None, dge_mode=None, **_):
    if args:
        raise st.error("err_positional_dma_copy", "nisa.dma_copy takes keyword arguments dst= and src= in the beta dialect")
    dst = tile(st, dst, "dma_copy", "dst", ANY)
    src = tile(st, src, "dma_copy", "src", ANY)
    c = Call("nisa.dma_copy", "dma")
    c.mask = op_mask(st, mask)
    fit(st, None, src.shape, dst.shape, "dma_copy")
    c.p["src_mask"], c.mask = _skip_out_of_range(st, src, dst, c.mask, oob_mode)
    c.ins, c.out = [src], dst
    c.p["rmw"] = dst_rmw_op
    # a copy of a region onto itself (the `dma_copy(dst=out, src=out)` write fence) moves no values
    c.p["same"] = dst_rmw_op is None and same_view(src, dst)
    if src.alloc.buffer in HBM_KINDS:
        track_load(st, src, c.p["src_mask"])
    if dst.alloc.param >= 0 and dst.alloc.param not in st.param_writes:
        st.param_writes[dst.alloc.param] = st.where()
    if st.trace_only:
        dst.write(np.zeros(()), c.mask, accumulate=dst_rmw_op is not None)
    return c


def _skip_out_of_range(st, src: Tensor, dst: Tensor, mask, mode):
    """`oob_mode=oob_mode.skip`: the elements of an indirect source or destination whose run-time index falls
    outside its tensor are not moved, and the destination keeps its contents there (REFERENCE §3.4), as
    `nl.load`/`nl.store(mode=...)` do (`oob_skip`). Returns the masks of the read and of the write."""
    read = oob_skip(st, src, mask, mode) if src.adv is not None else mask
    write = read
    if read is not mask and tuple(src.shape) != tuple(dst.shape):
        write = fit(st, full_mask(read, src.shape), src.shape, dst.shape, "dma_copy")
    if dst.adv is not None:
        write = oob_skip(st, dst, write, mode)
        if write is not read:  # a skipped destination element needs no source element either
            read = write if tuple(src.shape) == tuple(dst.shape) else read
    return read, write


def exec_dma_copy(st, c: Call) -> None:
    src, dst = c.ins[0], c.out
    if c.p["same"]:
        return
    arr = fit(st, src.read(c.p["src_mask"]), src.shape, dst.shape, "dma_copy")
    if c.p["rmw"] is not None:
        arr = f32(dst, c.mask) + dtypes.to_f32(arr)
    dst.write(arr, c.mask, accumulate=c.p["rmw"] is not None)


def check_dma_compute(st, *, dst, srcs, reduce_op=None, scales=None, unique_indices=True, oob_mode=None, **_):
    """`dma_compute(dst, srcs, reduce_op=nl.add)`: dst = sum(srcs), computed by the DMA engines in fp32
    (nki 0.3+; replaces dma_copy(dst_rmw_op=...)). Only add with unit scales exists. With an indirect
    dst that is also a source (a scatter-add), rows named more than once get every update."""
    dst = tile(st, dst, "dma_compute", "dst", ANY)
    srcs = [tile(st, t, "dma_compute", "srcs", ANY) for t in (srcs or ())]
    if not srcs or len(srcs) > 16:
        raise st.error("err_invalid_arguments", f"'dma_compute' takes 1 to 16 source tensors, got {len(srcs)}")
    if resolve_op(st, {"add": np.add}, reduce_op if reduce_op is not None else "add", "dma_compute reduce_op")[0] != "add":
        raise st.error("err_unsupported_op_argument", "'dma_compute' supports reduce_op=nl.add only")
    if scales is not None and any(float(x) != 1.0 for x in scales):
        raise st.error("err_unsupported_op_argument", f"'dma_compute' scales must all be 1.0, got {list(scales)}")
    for t in srcs:
        if t.size != dst.size:
            raise st.error("err_shape_mismatch", f"'dma_compute' source {list(t.shape)} and dst {list(dst.shape)} "
                           "hold different element counts")
        if t.alloc.buffer in HBM_KINDS:
            track_load(st, t, None)
    c = Call("nisa.dma_compute", "dma")
    c.ins, c.out = srcs, dst
    if st.trace_only:
        dst.write(np.zeros(()), accumulate=True)
    return c


def _same_access(t: Tensor, dst: Tensor) -> bool:
    """`t` reads exactly the elements indirect `dst` writes (the same allocation and index arrays)."""
    if t.adv is None or t.adv[0].alloc is not dst.adv[0].alloc or len(t.adv[1]) != len(dst.adv[1]):
        return False
    return all(np.array_equal(a, b) for a, b in zip(t.adv[1], dst.adv[1]))


def exec_dma_compute(st, c: Call) -> None:
    dst = c.out
    same = [t for t in c.ins if dst.adv is not None and _same_access(t, dst)]
    if same:  # dst = dst + others through indirect rows: a read-modify-write per row
        parent, idx, _, grid = dst.locate(None)
        flat = np.ravel_multi_index(tuple(np.broadcast_to(i, grid).ravel() for i in idx), parent.shape)
        uniq, first, inv = np.unique(flat, return_index=True, return_inverse=True)
        if uniq.size < flat.size:  # repeated rows: the DMA serialises the updates, every one lands
            others = [t for t in c.ins if t is not same[0]]
            add = np.zeros(flat.size, np.float32)
            for t in others:
                add += f32(t).reshape(-1)
            acc = f32(same[0]).reshape(-1)[first].astype(np.float32)
            np.add.at(acc, inv, add)
            dst.write(acc[inv].reshape(dst.shape), accumulate=True)
            return
    total = None
    for t in c.ins:
        v = f32(t).reshape(dst.shape)
        total = v if total is None else total + v
    dst.write(total, accumulate=True)


def check_dma_transpose(st, src, *, axes=None, mask=None, dtype=None, oob_mode=None, **_):
    src = tile(st, src, "dma_transpose", "src", ANY)
    nd = len(src.shape)
    # the documented default permutation: [1, 0], [2, 1, 0] and, for a 4-d tile, [3, 1, 2, 0] (not the reversal)
    axes = tuple(axes) if axes is not None else {4: (3, 1, 2, 0)}.get(nd, tuple(reversed(range(nd))))
    if axes not in ((1, 0), (2, 1, 0), (3, 1, 2, 0)):
        raise st.error("err_unsupported_transpose_axes", f"dma_transpose axes {axes} not in (1,0), (2,1,0), (3,1,2,0)")
    shape = tuple(src.shape[a] for a in axes)
    check_partitions(st, shape, "dma_transpose", "result")
    c = Call("nisa.dma_transpose", "dma")
    c.mask = op_mask(st, mask)
    c.ins = [src]
    c.p["axes"] = axes
    # `oob_mode=oob_mode.skip` over an indirect source: rows whose run-time index is past the tensor are not
    # moved, and the destination keeps its contents there (the skipped source elements, transposed)
    c.p["src_mask"] = oob_skip(st, src, None, oob_mode) if src.adv is not None else None
    if c.p["src_mask"] is not None:
        moved = np.transpose(full_mask(c.p["src_mask"], src.shape), axes)
        c.mask = moved if c.mask is None else moved & full_mask(c.mask, shape)
    c.out = c.result = fresh(st, shape, resolve_dtype(st, dtype, src.dtype))
    if src.alloc.buffer in HBM_KINDS:
        track_load(st, src, c.p["src_mask"])
    return c


def exec_dma_transpose(st, c: Call) -> None:
    set_result(c.out, np.transpose(c.ins[0].read(c.p["src_mask"]), c.p["axes"]), c.mask)


def check_atomic_rmw(st, dst, value, op, *, mask=None, **_):
    dst = tile(st, dst, "atomic_rmw", "dst", HBM_KINDS)
    c = Call("atomic_rmw", "dma")
    c.mask = op_mask(st, mask)
    c.out = dst
    c.p["v"] = value
    if isinstance(value, Tensor):
        c.ins = [tile(st, value, "atomic_rmw", "value")]
    return c


def exec_atomic_rmw(st, c: Call) -> None:
    dst, v = c.out, c.p["v"]
    arr = np.broadcast_to(lead_align(f32(v), len(dst.shape)), dst.shape)
    if dst.adv is not None:
        parent, idx, m, grid = dst.locate(c.mask)
        full = tuple(np.broadcast_to(i, grid) for i in idx)
        arr = arr.reshape(grid)
        if m is not None:
            full, arr = tuple(i[m] for i in full), arr[m]
        if parent.data.dtype == np.float32:
            np.add.at(parent.data, full, arr)  # duplicate indices accumulate, as atomics do
        else:
            tmp = parent.data.astype(np.float32)
            np.add.at(tmp, full, arr)
            parent.data[...] = dtypes.cast(tmp, parent.dtype)
        return
    dst.write(f32(dst) + arr, c.mask)


OPS = table(
    Op("nisa.dma_copy", check_dma_copy, exec_dma_copy, cost_dma),
    Op("nisa.dma_compute", check_dma_compute, exec_dma_compute, cost_dma),
    Op("nisa.dma_transpose", check_dma_transpose, exec_dma_transpose, cost_dma),
    Op("atomic_rmw", check_atomic_rmw, exec_atomic_rmw, cost_dma),
)
