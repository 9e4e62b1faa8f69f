"""Tiles: views of an allocation (evidence.nki.alloc) made by indexing (evidence.nki.subscripts).

`Tensor` is a view: basic indexing (ints, slices, `...`) gives numpy views of the allocation's storage
and bookkeeping masks; advanced indexing is kept lazy and resolved when an instruction reads or writes
it. Reads see never-written elements as undefined (`wmask`); writes keep the written-element masks and
HBM write stamps (evidence.nki.write_records). Arithmetic operators dispatch to the element-wise ops
(evidence.nki.tensor_operators).

Undefined data (never-written elements, masked-out parts of fresh results) is tracked by `wmask`
on reads and by `undefined.py` on writes (the `uninitialized_read` rule).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.lib.array_utils import byte_bounds

from evidence.nki import dtypes
from evidence.nki import state as _state
from evidence.nki import access_pattern, coverage, dispatch, overwrites, subscripts, undefined, view_methods, write_records
from evidence.nki.alloc import HBM_KINDS, ONCHIP, Alloc
from evidence.nki.errors import UnsupportedMethodError, UnsupportedOpError
from evidence.nki.host_access import HostAccessGuard
from evidence.nki.indexing import fit_mask, full_mask
from evidence.nki.tensor_operators import TensorOperators


class Tensor(TensorOperators, HostAccessGuard):
    """A view of an allocation. Arithmetic operators dispatch to the element-wise ops; host reads of
    its values are refused (host_access.HostAccessGuard)."""

    __slots__ = ("alloc", "data", "shape", "dtype", "pdim", "wmask", "stamp", "lmask", "adv", "valid", "fresh",
                 "reduce_op", "block", "cut", "pstart", "producer", "box", "views", "last", "written",
                 "reinterpreted", "indirect")
    __array_priority__ = 1000
    __array_ufunc__ = None  # numpy scalars/arrays defer to our reflected operators (np.float32(2) * tile)

    def __init__(self, alloc: Alloc, data, shape, pdim=0, wmask=None, stamp=None, lmask=None, adv=None):
        self.alloc = alloc
        self.data = data
        self.shape = shape
        self.dtype = alloc.dtype
        self.pdim = pdim
        self.wmask = wmask
        self.stamp = stamp
        self.lmask = lmask
        self.adv = adv
        self.valid = None  # bool mask of the elements a masked instruction produced
        self.fresh = False  # an instruction's result not yet bound to a destination
        self.reduce_op = None  # loop_reduce result: assigning it combines with the destination
        # Integer indices on the block dimensions before the partition dimension (`buf[k]`): the part
        # of the allocation this view covers, for dependencies in the trace; () is the whole allocation.
        self.block = ()
        self.cut = None  # (recipe, array, starts) of a view the compiler-style fast path cut: equal cuts, equal views
        # A partition range that breaks the start rule (REFERENCE §1): reported when a compute engine
        # reads or writes this view (dispatch.partition_start); DMA transfers address any partition.
        self.pstart = None
        self.producer = None  # engine of the instruction that produced this fresh result
        self.box = None  # the region of the allocation this view is, when it is one box (see region())
        self.views = None  # the fast path's views cut from this tensor: (recipe, starts) -> what to build them from
        self.last = None  # (key, view) of the last `self[key]` the fast path served (see `assigns_itself`)
        self.written = False  # every element is known written: writes never unwrite, so it stays so (`_covered`)
        self.reinterpreted = False  # a view of the bytes as another dtype (`.view(dt)`, `.ap(dtype=)`): no wmask
        self.indirect = False  # an advanced access whose indices include run-time values (an index tile)

    def __getattr__(self, name: str):
        # only reached for names the class lacks: a tile method of NKI's tensor API with no simulation
        if name.startswith("_") or name in Tensor.__slots__:
            raise AttributeError(name)
        if name in view_methods.METHODS:  # NkiTensor view methods (nki 0.5+), as access patterns
            return functools.partial(view_methods.METHODS[name], self)
        if name in view_methods.PROPERTIES:
            return view_methods.PROPERTIES[name](self)
        st = _state._current
        file, line = st.where() if st is not None else (None, 0)
        raise UnsupportedMethodError(
            "unsupported_op", f"NKI tensor method or attribute '.{name}' is not simulated: add it to "
            "evidence.nki.tensor.Tensor", file, line)

    @classmethod
    def whole(cls, alloc: Alloc) -> Tensor:
        return cls(alloc, alloc.data, alloc.shape, alloc.pdim, alloc.wmask, alloc.stamp, alloc.lmask)

    # --- numpy-like attributes -----------------------------------------------------------
    @property
    def buffer(self) -> str:
        return self.alloc.buffer

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return dtypes.itemsize(self.dtype)

    @property
    def partitions(self) -> int:
        return self.shape[0] if self.shape else 1

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Tensor({self.buffer}, {list(self.shape)}, {dtypes.name(self.dtype)})"

    def __bool__(self) -> bool:
        raise _state.current().error(
            "err_ambiguous_tensor_truth_value", "the truth value of a tile is ambiguous; use &, |, ~ and masks"
        )

    def __iter__(self):
        raise _state.current().error("err_unsupported_tensor_iteration", "a tile cannot be iterated; index it")

    # --- indexing ------------------------------------------------------------------------
    def __getitem__(self, key) -> Tensor:
        k = key if isinstance(key, tuple) else (key,)
        v = subscripts.affine_view(self, k)
        if v is None:
            return subscripts.index_other(self, k)
        self.last = (key, v)  # a fast-path view: its key holds only integers and index expressions, no tiles
        return v

    def __setitem__(self, key, value) -> None:
        if not assigns_itself(self, key, value):
            dispatch.call("assign", (self, key, value), {})

    # --- views and casts (tensor methods) ------------------------------------------------
    def reshape(self, *shape, **kw) -> Tensor:
        if "shape" in kw:
            shape = (kw["shape"],)
        return dispatch.call("reshape", (self, shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape), {})

    def view(self, dtype) -> Tensor:
        return dispatch.call("view", (self, dtype), {})

    def astype(self, dtype) -> Tensor:
        return dispatch.call("astype", (self, dtype), {})

    def broadcast_to(self, shape) -> Tensor:
        return dispatch.call("broadcast_to", (self,), {"shape": shape})

    def expand_dims(self, axis) -> Tensor:
        return dispatch.call("expand_dims", (self, axis), {})

    def assert_shape(self, shape) -> Tensor:
        if tuple(shape) != tuple(self.shape):
            raise _state.current().error("err_annotation_shape_mismatch", f"expected shape {list(shape)}, got {list(self.shape)}")
        return self

    # --- reading and writing (used by op rules) ------------------------------------------
    def read(self, mask: np.ndarray | None = None) -> np.ndarray:
        """The values of this view as an array (a view when possible); reports uninitialised reads."""
        if self.alloc.writer is not None:  # a pending TensorE job still writes it
            self.alloc.state.pipeline.settle(reads=(self.alloc,))
        if self.adv is None:
            data = self.data
            if self.wmask is not None and self.alloc.wmask is not None and not self._covered():
                write_records.sync(self.alloc)
                if self._check_init(self.wmask, mask):
                    data = undefined.fill(data, self.wmask)
            elif self.stamp is not None and self.alloc.param < 0:
                overwrites.consumed(self.alloc, self.stamp, ..., mask, self.region())
                if not write_records.stamped(self):
                    self._check_init(self.stamp >= 0, mask)
            elif self.alloc.pend is not None:  # a dtype view of a kernel-created HBM tensor
                overwrites.read_untracked(self.alloc)
            if self.alloc.origin is not None:
                undefined.inherit(self.alloc, data.dtype)
            return data
        parent, idx, m, _ = self.locate(mask)
        data = parent.data[idx]
        if parent.wmask is not None and parent.alloc.wmask is not None:
            write_records.sync(parent.alloc)
            written = parent.wmask[idx]
            if self._check_init(written, m):
                data = undefined.fill(data, written)
        elif parent.stamp is not None and parent.alloc.param < 0:
            overwrites.consumed(parent.alloc, parent.stamp, idx)
            write_records.materialise_stamps(parent.alloc)
            self._check_init(parent.stamp[idx] >= 0, m)
        elif parent.alloc.pend is not None:
            overwrites.read_untracked(parent.alloc)
        if parent.alloc.origin is not None:
            undefined.inherit(parent.alloc, data.dtype)
        return data.reshape(self.shape)

    def read_pending(self) -> np.ndarray | None:
        """`read()` for a consumer that runs as a pipeline job behind the pending jobs writing this view:
        the bookkeeping (undefined-data origin) now, in program order, and the array whose values those
        jobs produce. None when reading needs the values now (a gather, undefined elements to fill)."""
        if self.adv is not None:
            return None
        if self.wmask is not None and self.alloc.wmask is not None:
            if not self._covered():
                write_records.sync(self.alloc)
                if not self.wmask.all():
                    return None
        elif self.stamp is not None and self.alloc.param < 0:
            if not write_records.stamped(self):
                return None
            overwrites.consumed(self.alloc, self.stamp, region=self.region())
        elif self.alloc.pend is not None:
            overwrites.read_untracked(self.alloc)
        if self.alloc.origin is not None:
            undefined.inherit(self.alloc, self.data.dtype)
        return self.data

    def write_pending(self, value: np.ndarray, src: Alloc, producer=None) -> bool:
        """`write(value)` as a pipeline job behind the pending jobs of `src` (which produce `value`) and of
        this allocation: bookkeeping now (written masks, HBM write stamps), the copy on a worker. False
        (nothing done) when the write needs the values now: undefined data to trace, an index gather.

        `producer`: the still-open job step that computes `value` (a pending copy out of PSUM); it then
        writes its values here itself (`producer.deliver_to(dst, dtype, convert)`), one copy instead of two."""
        st = self.alloc.state
        if self.adv is not None or st.read_origin is not None or st.trace_only:
            return False
        self.alloc.zeros = False
        if self.alloc.origin is not None and self.size == self.alloc.data.size:
            self.alloc.origin = None  # wholly overwritten by defined values
        dst, dt = self.data, self.dtype
        convert = dt is dtypes.tfloat32 or value.dtype.kind != dst.dtype.kind

        if producer is not None:
            producer.deliver_to(dst, dt, convert)
            st.pipeline.run(None, reads=(src,), writes=(self.alloc,), merge=True, block=self._one_block())
        else:
            def job() -> None:
                dst[...] = dtypes.cast(value, dt) if convert else value

            st.pipeline.run(job, reads=(src,), writes=(self.alloc,), block=self._one_block())
        self.mark_written(None)
        if self.stamp is not None:
            write_records.stamp(st, self.alloc, self.stamp, ..., None, False, self.region())
        return True

    def _one_block(self) -> int | None:
        """The block of a block-dimension allocation that holds all of this view's memory (its index in
        the C-ordered blocks, from the addresses themselves), or None: writes to different blocks need
        not wait for each other (a PSUM group copied into its block of `(KC, MT, NB, par_dim(128), N)`)."""
        alloc = self.alloc
        data = alloc.data
        if not alloc.pdim or self.data.size == 0 or not data.flags.c_contiguous:
            return None
        block_bytes = data.itemsize * math.prod(data.shape[alloc.pdim:])
        base = data.__array_interface__["data"][0]
        lo, hi = byte_bounds(self.data)
        first, last = (lo - base) // block_bytes, (hi - 1 - base) // block_bytes
        return first if first == last and 0 <= first else None

    def locate(self, mask=None):
        """An advanced access as (parent, index arrays, mask or None, grid shape), all in grid space.

        The grid shape is the numpy broadcast of the index arrays; the tile shape drops the unit
        axes a higher-rank mgrid leaves behind (see `_advanced`), so both hold the same elements.
        """
        parent, idx, grid = self.adv
        m = None
        if mask is not None:
            m = full_mask(mask, self.shape).reshape(grid)
        return parent, subscripts.clip_masked(idx, parent.shape, m, grid), m, grid

    def region(self) -> coverage.Box | None:
        """This view as a box of its allocation (per axis [lo, hi)), or None when it is not one (or not known
        cheaply: gathers, reshaped, transposed or strided views)."""
        b = self.box
        if b is None and self.adv is None and self.data is self.alloc.data and self.size:
            b = self.box = coverage.whole(self.shape)
        return b

    def _covered(self) -> bool:
        """Every element of this view was written (the allocation's boxes say so, without its mask). Kept
        views (`affine_view`) are read again and again: the first yes is remembered."""
        if self.written:
            return True
        cov = self.alloc.cov
        if cov is None:
            return False
        box = self.region()
        if box is not None and cov.covers(box):
            self.written = True
            return True
        return False

    def _check_init(self, written: np.ndarray, mask) -> bool:
        """Record a read of undefined elements (within `mask`) as this instruction's origin; True if any."""
        ok = written if mask is None else (written | ~full_mask(mask, written.shape))
        if ok.all():
            return False
        st = self.alloc.state
        if not st.read_direct:  # the instruction's own undefined read names it, over inherited origins
            st.read_direct = True
            st.read_origin = st.where()
        return True

    def write(self, value: np.ndarray, mask: np.ndarray | None = None, accumulate: bool = False) -> None:
        """Store `value` (already shaped like this view) into the allocation, only where `mask`.

        `accumulate` marks read-modify-write stores (DMA with dst_rmw_op), which iterations may share.
        """
        st = self.alloc.state
        self.alloc.zeros = False  # any store, including an instruction's second output (Alloc.zeros)
        if self.alloc.writer is not None or self.alloc.readers:  # pending TensorE jobs use it
            st.pipeline.settle(writes=(self.alloc,))
        if st.read_origin is not None:
            undefined.taint(st, self, value, mask)
        elif mask is None and self.alloc.origin is not None and self.size == self.alloc.data.size:
            self.alloc.origin = None  # wholly overwritten by defined values
        if self.adv is not None:
            if self.reinterpreted:
                raise UnsupportedOpError("unsupported_op", "a write through '.ap(vector_offset=)' over a view of the "
                                         f"bytes as another dtype ({dtypes.name(self.dtype)}) is not simulated",
                                         *st.where())
            parent, idx, m, grid = self.locate(mask)
            value = np.broadcast_to(value, self.shape).reshape(grid) if np.ndim(value) else value
            if m is not None:
                idx = tuple(np.broadcast_to(i, grid)[m] for i in idx)
                value = np.broadcast_to(value, grid)[m]
            if not st.trace_only:
                parent.data[idx] = dtypes.cast(value, self.dtype)
            if parent.wmask is not None and parent.alloc.wmask is not None:
                if parent.alloc.cov is not None:
                    parent.alloc.cov.irregular()
                parent.wmask[idx] = True
                parent.alloc.unwritten = None  # duplicate indices: recount
                write_records.settle(parent.alloc)
            if parent.stamp is not None:
                write_records.stamp(st, parent.alloc, parent.stamp, idx, None, accumulate, indirect=self.indirect)
            return
        if not st.trace_only:
            v = dtypes.cast(value, self.dtype) if (self.dtype is dtypes.tfloat32 or value.dtype.kind != self.data.dtype.kind) else value
            if mask is None:
                self.data[...] = v
            else:
                np.copyto(self.data, v, where=fit_mask(mask, self.shape), casting="unsafe")
        self.mark_written(mask)
        if self.stamp is not None:
            write_records.stamp(st, self.alloc, self.stamp, ..., mask, accumulate, self.region())

    # --- nki 0.3+ (dst-first calls, access patterns) ------------------------------------------
    def check_destination(self, c) -> None:
        """This tile as the `dst` of a dst-first instruction whose plan `c` has a fresh result: the
        same partitions and elements per partition, in a memory the engine can write."""
        st = self.alloc.state
        res = c.out
        if res is None or not res.fresh:
            raise st.error("err_invalid_dst", f"'{c.op}' has no result to write into dst")
        if res.partitions != self.partitions or res.size != self.size:
            raise st.error("err_shape_mismatch", f"dst {list(self.shape)} of '{c.op}' does not hold its result "
                           f"{list(res.shape)} (partitions and elements per partition must match)")
        allowed = {"tensor": ("psum",), "gpsimd": ("sbuf",), "dma": ONCHIP + HBM_KINDS}.get(c.engine, ONCHIP)
        if self.alloc.buffer not in allowed:
            raise st.error("err_unsupported_memory", f"'{c.op}' on the {c.engine} engine writes "
                           f"{'|'.join(sorted({'hbm' if b in HBM_KINDS else b for b in allowed}))}, "
                           f"not a {self.alloc.buffer} dst {list(self.shape)}")

    def defined_mask(self) -> np.ndarray | None:
        """Which elements of this view hold defined values (None: all of them)."""
        if self.adv is None:
            if self.wmask is None or self.alloc.wmask is None:
                return None
            write_records.sync(self.alloc)
            return self.wmask
        parent, idx, _, _ = self.locate()
        if parent.wmask is None or parent.alloc.wmask is None:
            return None
        write_records.sync(parent.alloc)
        return parent.wmask[idx].reshape(self.shape)

    def receive(self, result: Tensor, accumulate=False) -> None:
        """Write a dst-first instruction's fresh result here. A matmul's PSUM `accumulate`: True adds,
        False overwrites, None (the default) adds where this tile already holds values and overwrites
        where it does not, so the first matmul into a fresh allocation overwrites (REFERENCE §3.5)."""
        st = self.alloc.state
        self.alloc.zeros = False
        if st.trace_only:
            self.write(np.zeros(()), result.valid)
            return
        values, valid = result.data, result.valid
        if result.shape != self.shape:  # same elements, another shape: [P] into [P, 1], [M, a*b] into [M, a, b]
            values = values.reshape(self.shape)
            valid = None if valid is None else valid.reshape(self.shape)
        if accumulate is None:
            defined = self.defined_mask()
            current = dtypes.to_f32(self.data if self.adv is None else self.read())
            values = current + values if defined is None else np.where(defined, current + values, values)
        elif accumulate:
            values = dtypes.to_f32(self.read()) + values  # onto undefined data: an undefined read
        self.write(values, valid)

    def ap(self, pattern, offset=0, scalar_offset=None, vector_offset=None, indirect_dim=0, dtype=None, **_) -> Tensor:
        """nki 0.3+ access pattern over this tensor's row-major layout (see evidence.nki.access_pattern)."""
        st = self.alloc.state
        base = self.alloc.data
        if self.adv is not None:
            raise st.error("err_invalid_access_pattern", "'.ap' on an indexed gather; call it on the tensor")
        try:
            shape, steps = access_pattern.parse(pattern)
        except ValueError as exc:
            raise st.error("err_invalid_access_pattern", str(exc)) from None
        if dtype is not None and dtypes.storage(dtypes.resolve(dtype)) != dtypes.storage(dtypes.resolve(self.dtype)):
            return self._reinterpreting_ap(pattern, shape, steps, offset, dtypes.resolve(dtype), scalar_offset,
                                           vector_offset, indirect_dim)
        if self.reinterpreted and dtypes.storage(dtypes.resolve(self.dtype)) != self.alloc.data.dtype:
            # `.view(dt).ap(...)`: the pattern counts elements of the view's dtype, not of the allocation's
            return self._reinterpreting_ap(pattern, shape, steps, offset, dtypes.resolve(self.dtype), scalar_offset,
                                           vector_offset, indirect_dim)
        if not st.trace_only and not base.flags.c_contiguous:
            raise st.error("err_invalid_access_pattern", f"'.ap' needs a contiguous tensor, {self!r} is not")
        # where this view begins: its data, or in trace-only mode (no data) a bookkeeping array shaped alike
        probe = [(v, b) for v, b in ((self.data, base), (self.stamp, self.alloc.stamp), (self.lmask, self.alloc.lmask))
                 if v is not None and b is not None and not (st.trace_only and b is base)]
        start = int(offset) + (access_pattern.start_of(*probe[0]) if probe else 0)
        # the indirect dimension is one of this view's (a `.reshape((n,))` of a [B, L, C] tensor indexes elements,
        # as nki-library's deformable attention gathers by element offset): its stride counts an offset's step
        view = probe[0][0] if probe else None
        if view is not None and view.ndim > int(indirect_dim) and view.itemsize:
            row = view.strides[int(indirect_dim)] // view.itemsize
        else:
            row = int(np.prod(self.alloc.shape[int(indirect_dim) + 1:], dtype=np.int64))
        if scalar_offset is not None:
            start += _scalar(scalar_offset) * row
        size = int(np.prod(self.alloc.shape, dtype=np.int64))
        if vector_offset is not None:
            if int(indirect_dim) != 0:
                raise st.error("err_invalid_access_pattern", "a vector_offset indexes dimension 0 only")
            rows = vector_offset.as_index() if isinstance(vector_offset, Tensor) else np.asarray(vector_offset)
            # a [P, F] offset tile supplies its offsets column by column (one 128-partition vector per free
            # position): row j * P + p of the pattern takes offsets[p, j]
            rows = np.moveaxis(rows, 0, -1).reshape(-1) if rows.ndim > 1 else rows.reshape(-1)
            if rows.size != shape[0]:
                raise st.error("err_invalid_access_pattern", f"vector_offset holds {rows.size} rows for "
                               f"{shape[0]} partitions")
            flat = access_pattern.gathered(start, shape, steps, rows.astype(np.int64), row)
            outside = (flat < 0) | (flat >= size)
            idx = np.unravel_index(np.where(outside, 0, flat), self.alloc.shape)
            if outside.any():
                # an element past the tensor is an error where an instruction reads it, unless its DMA skips
                # out-of-range elements (`oob_mode=oob_mode.skip`, as nki-library's MoE kernels pass -1 rows):
                # its first index is put outside the tensor so the instruction's bounds check sees it
                idx = (np.where(outside, -1, idx[0]),) + tuple(idx[1:])
            return Tensor(self.alloc, None, shape, 0, adv=(Tensor.whole(self.alloc), idx, shape))
        outside = access_pattern.unaddressable(st, pattern, start, shape, steps, size, self.dtype, self.alloc.buffer,
                                               f"tensor {list(self.alloc.shape)} ({size} elements)")
        if outside is not None:  # an error only where an instruction uses it
            return outside

        def sub(a):
            if a is None:
                return None
            if st.trace_only and a is base:
                return np.broadcast_to(np.zeros((), a.dtype), shape)
            return access_pattern.strided(a, start, shape, steps)

        a = self.alloc
        return Tensor(a, sub(base), shape, 0, sub(a.wmask), sub(a.stamp), sub(a.lmask))

    def _mark_bytes_written(self, mask) -> None:
        """A write through a view of the bytes as another dtype: the allocation's elements holding any written
        byte count as written (bytes written into a bf16 tile through a uint8 view are defined bf16 values)."""
        alloc, data = self.alloc, self.data
        base = alloc.data
        off = data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        byte_off = np.full((), off, np.int64)
        for n, stride in zip(data.shape, data.strides):
            byte_off = np.add.outer(byte_off, np.arange(n, dtype=np.int64) * stride)
        if mask is not None:
            byte_off = byte_off[full_mask(mask, self.shape)]
        elems = np.unique((byte_off.reshape(-1, 1) + np.arange(data.itemsize)).reshape(-1) // base.itemsize)
        if alloc.cov is not None:
            alloc.cov.irregular()
        write_records.sync(alloc)
        flat = alloc.wmask.reshape(-1)
        fresh_ = int(elems.size - np.count_nonzero(flat[elems]))
        flat[elems] = True
        if alloc.unwritten is not None:
            alloc.unwritten -= fresh_
        write_records.settle(alloc)

    def _reinterpreting_ap(self, pattern, shape, steps, offset, dt, scalar_offset=None, vector_offset=None,
                           indirect_dim=0) -> Tensor:
        """`.ap(..., dtype=)` with another dtype, or `.ap()` on a `.view(dtype)`: the documented reinterpret cast,
        the pattern, offset and a scalar_offset's rows counted in elements of the new dtype over the same bytes.
        Like a `.view(dtype)`, it keeps no written-element bookkeeping (defined bytes read as another type can be
        NaN patterns)."""
        st = self.alloc.state
        old = self.alloc.data.itemsize if self.alloc.data is not None else \
            dtypes.storage(dtypes.resolve(self.alloc.dtype)).itemsize
        d = dtypes.storage(dt)
        total = int(np.prod(self.alloc.shape, dtype=np.int64)) * old
        if total % d.itemsize:
            raise st.error("err_invalid_access_pattern", f"a {total}-byte tensor is not a whole number of {dt} elements")
        size = total // d.itemsize
        begin = 0 if st.trace_only else access_pattern.start_of(self.data, self.alloc.data) * old
        start = begin // d.itemsize + int(offset)
        dim = int(indirect_dim)  # whole rows of indirect_dim of the view .ap is called on, in bytes
        row_bytes = self.data.strides[dim] if not st.trace_only and self.data.ndim > dim else \
            int(np.prod(self.shape[dim + 1:], dtype=np.int64)) * dtypes.storage(dtypes.resolve(self.dtype)).itemsize
        if scalar_offset is not None:
            start += _scalar(scalar_offset) * (row_bytes // d.itemsize)
        if vector_offset is not None:
            if dim != 0:
                raise st.error("err_invalid_access_pattern", "a vector_offset indexes dimension 0 only")
            return self._reinterpreting_gather(vector_offset, start, shape, steps, row_bytes // d.itemsize, dt, size)
        outside = access_pattern.unaddressable(st, pattern, start, shape, steps, size, dt, self.alloc.buffer,
                                               f"a {size}-element {dt} view of the tensor's bytes")
        if outside is not None:
            return outside
        if st.trace_only:
            data = np.broadcast_to(np.zeros((), d), shape)
        else:
            if not self.alloc.data.flags.c_contiguous:
                raise st.error("err_invalid_access_pattern", f"'.ap' needs a contiguous tensor, {self!r} is not")
            data = access_pattern.strided(self.alloc.data.reshape(-1).view(d), start, shape, steps)
        r = Tensor(self.alloc, data, shape, 0)
        r.dtype = dt
        r.reinterpreted = True
        return r

    def _reinterpreting_gather(self, vector_offset, start, shape, steps, row, dt, size) -> Tensor:
        """`.ap(vector_offset=)` over the bytes as another dtype (nki-library transposes its packed-fp8 KV cache
        blocks as bf16 this way): a gather whose parent is the whole allocation as a flat `dt` array. Rows past
        the tensor get index -1, out of bounds where a DMA reads them unless it skips them."""
        st = self.alloc.state
        rows = vector_offset.as_index() if isinstance(vector_offset, Tensor) else np.asarray(vector_offset)
        rows = np.moveaxis(rows, 0, -1).reshape(-1) if rows.ndim > 1 else rows.reshape(-1)
        if rows.size != shape[0]:
            raise st.error("err_invalid_access_pattern", f"vector_offset holds {rows.size} rows for {shape[0]} "
                           "partitions")
        flat = access_pattern.gathered(start, shape, steps, rows.astype(np.int64), row)
        flat = np.where((flat < 0) | (flat >= size), -1, flat)
        d = dtypes.storage(dt)
        data = np.zeros((size,), d) if st.trace_only else self.alloc.data.reshape(-1).view(d)
        parent = Tensor(self.alloc, data, (size,), 0)
        parent.dtype, parent.reinterpreted = dt, True
        r = Tensor(self.alloc, None, shape, 0, adv=(parent, (flat,), shape))
        r.dtype, r.reinterpreted, r.indirect = dt, True, True
        return r

    def mark_written(self, mask: np.ndarray | None = None) -> None:
        """Count this (basic) view's elements, within `mask`, as holding defined values from now on."""
        if self.wmask is None or self.alloc.wmask is None:
            if self.reinterpreted and self.alloc.wmask is not None and not self.alloc.state.trace_only:
                self._mark_bytes_written(mask)
            return
        alloc = self.alloc
        cov = alloc.cov
        if mask is None:
            box = self.region() if cov is not None else None
            if box is not None:
                fresh_ = cov.count(box)
                if fresh_ is None:
                    cov.sync()
                    fresh_ = self.wmask.size - np.count_nonzero(self.wmask)
                if fresh_:
                    cov.record(box)  # paints the mask unless painting is deferred
            else:
                if cov is not None:
                    cov.irregular()
                fresh_ = self.wmask.size - np.count_nonzero(self.wmask)
                self.wmask[...] = True
        else:
            if cov is not None:
                cov.irregular()
            m = full_mask(mask, self.shape)
            fresh_ = np.count_nonzero(m & ~self.wmask)
            self.wmask[...] |= m
        if alloc.unwritten is not None:
            alloc.unwritten -= int(fresh_)
        write_records.settle(alloc)

    def as_index(self) -> np.ndarray:
        """The tile's values used as an index (a runtime offset such as `x[i_p, idx[0, j] + i_f]`)."""
        if self.alloc.state.trace_only:
            return np.zeros(self.shape, np.int64)  # data-dependent: trace-only mode takes 0
        return undefined.index_values(self)


def assigns_itself(t: Tensor, key, value) -> bool:
    """`t[key] = value` where `value` is the very view `t[key]` returned for this key object: the store
    Python issues after `t[key] += x`. Such an assignment moves nothing (`same_view`, ops.memory), so
    only its dispatch bookkeeping is done (`dispatch.self_assignment`), without indexing `t` again."""
    last = t.last
    if last is None or last[1] is not value or last[0] is not key or value.producer is not None:
        return False
    return dispatch.self_assignment(value)


def _scalar(x) -> int:
    """A runtime scalar offset: a [1, 1] tile (read now) or a register / plain integer."""
    if isinstance(x, Tensor):
        v = x.as_index().reshape(-1)
        return int(v[0]) if v.size else 0
    return int(x)
