"""Tensors and tiles: an allocation in one buffer, and views of it made by indexing.

`Alloc` owns the storage (numpy, in the declared dtype), the buffer kind and the bookkeeping
masks: `wmask` (which elements of an uninitialised on-chip tensor, or of a masked instruction's
fresh result, hold defined values), `stamp`
(HBM tensors written by the kernel: which write path last wrote each element, -1 = never) and
`lmask` (HBM inputs: which elements were already loaded, for redundant-read accounting).
`Tensor` is a view: basic indexing (ints, slices, `...`) gives numpy views of all of these;
advanced indexing (arange/mgrid grids, indirect index tiles) is kept lazy as (parent, index
arrays) and resolved when an instruction reads or writes it, together with the op's mask.

Undefined data (never-written elements, masked-out parts of fresh results) is tracked by `wmask`
on reads and by `undefined.py` on writes (the `uninitialized_read` rule).
"""

from __future__ import annotations

import functools
import math
from operator import add

import numpy as np
from numpy.lib.array_utils import byte_bounds

from evidence.nki import dtypes
from evidence.nki import state as _state
from evidence.nki import access_pattern, coverage, dispatch, strided, undefined, view_methods
from evidence.nki.coverage import Coverage
from evidence.nki.errors import UnsupportedMethodError
from evidence.nki.host_access import HostAccessGuard
from evidence.nki.indexing import IndexExpr, MaskExpr, fit_mask, full_mask

ONCHIP = ("sbuf", "psum")
HBM_KINDS = ("hbm", "shared_hbm", "private_hbm")


def _dummy(shape: tuple[int, ...], dt) -> np.ndarray:
    """Trace-only storage: a zero-stride view, no memory behind it."""
    return np.broadcast_to(np.zeros((), dtype=dtypes.storage(dt)), shape)


class Alloc:
    __slots__ = ("buffer", "dtype", "shape", "data", "wmask", "stamp", "lmask", "name", "param",
                 "mutable", "pdim", "state", "held", "origin", "dep_reported", "site", "uid", "writer", "readers",
                 "whole_writer", "block_writers", "unwritten", "cov", "lcov", "stamp_boxes", "zeros", "__weakref__")

    def __init__(self, st, buffer: str, shape: tuple[int, ...], dt, data: np.ndarray | None,
                 pdim: int = 0, name: str = "", uninit: bool = False) -> None:
        self.buffer = buffer
        self.dtype = dt
        self.shape = shape
        self.pdim = pdim
        self.name = name
        self.param = -1
        self.mutable = False
        self.stamp = None
        self.stamp_boxes = None  # evidence.nki.stamp_boxes: the stamps as boxes until elements are needed
        self.lmask = None
        self.origin = None  # file:line of an undefined read some of the values held here derive from
        self.dep_reported = False  # output dependency already reported
        self.site = (None, 0)  # kernel file:line that created it (HBM tensors)
        self.state = st
        self.uid = st.new_alloc_id()  # stable id of this allocation in the trace (dependencies, liveness)
        self.writer = None  # the pending pipeline job writing this allocation (evidence.nki.pipeline)
        self.readers: list = []  # pending pipeline jobs reading it
        self.whole_writer = None  # of those writers, the last that may have written anywhere in it
        self.block_writers: dict | None = None  # block index -> the last pending job writing only that block
        # every element holds +0.0 and no instruction has written it since (an `nl.zeros` tile): a PSUM
        # accumulation group into it starts from zeros without reading it (evidence.nki.product_batch)
        self.zeros = False
        tracked = uninit and buffer in ONCHIP and not st.trace_only
        if data is None:
            if st.trace_only:
                data = _dummy(shape, dt)
            elif tracked:
                # Zero pages the OS maps lazily (evidence.nki.page_pool): a large block-dimension tensor costs
                # memory only for the blocks the kernel writes. Its unwritten elements read as NaN (`Tensor.read`).
                data = st.pages.zeros(shape, dtypes.storage(dt), unread=True)
            else:
                # from the page pool too (4 KiB pages): numpy advises 2 MiB pages for arrays of 4 MiB and up,
                # and on hosts that compact memory on such a fault, first touches cost ten times as much
                data = dtypes.fill_uninitialised(shape, dt, st.pages.empty)
        self.data = data
        self.wmask = st.pages.zeros(shape, bool) if tracked else None
        self.unwritten = data.size if tracked else 0  # elements wmask still holds False for (None: recount)
        # the boxes written so far (evidence.nki.coverage): O(1) answers beside wmask; lcov, beside lmask
        self.cov = Coverage(pdim, self.wmask, lazy=True) if tracked else None
        self.lcov = None
        self.held = 0
        if buffer in ONCHIP:
            per_part = dtypes.itemsize(dt)
            for i, n in enumerate(shape):
                if i != pdim:
                    per_part *= n
            self.held = st.alloc_onchip(buffer, per_part)
            rec = st.recorder
            if rec.keep:
                rec.allocs[self.uid] = (buffer, self.held)

    def __del__(self) -> None:
        if self.held:
            self.state.free_onchip(self.buffer, self.held)
            rec = self.state.recorder
            rec.chains.free(self.uid)
            if rec.keep:
                rec.frees.append((len(rec.events), self.uid))


class Tensor(HostAccessGuard):
    """A view of an allocation. Arithmetic operators dispatch to the element-wise ops; host reads of
    its values are refused (host_access.HostAccessGuard)."""

    __slots__ = ("alloc", "data", "shape", "dtype", "pdim", "wmask", "stamp", "lmask", "adv", "valid", "fresh",
                 "reduce_op", "block", "cut", "pstart", "producer", "box", "views", "last", "written")
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
        v = _affine_view(self, k)
        if v is None:
            return _index_other(self, k)
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
                _sync(self.alloc)
                if self._check_init(self.wmask, mask):
                    data = undefined.fill(data, self.wmask)
            elif self.stamp is not None and self.alloc.param < 0 and not stamped(self):
                self._check_init(self.stamp >= 0, mask)
            if self.alloc.origin is not None:
                undefined.inherit(self.alloc)
            return data
        parent, idx, m, _ = self.locate(mask)
        data = parent.data[idx]
        if parent.wmask is not None and parent.alloc.wmask is not None:
            _sync(parent.alloc)
            written = parent.wmask[idx]
            if self._check_init(written, m):
                data = undefined.fill(data, written)
        elif parent.stamp is not None and parent.alloc.param < 0:
            materialise_stamps(parent.alloc)
            self._check_init(parent.stamp[idx] >= 0, m)
        if parent.alloc.origin is not None:
            undefined.inherit(parent.alloc)
        return data.reshape(self.shape)

    def read_pending(self) -> np.ndarray | None:
        """`read()` for a consumer that runs as a pipeline job behind the pending jobs writing this view:
        the bookkeeping (undefined-data origin) now, in program order, and the array whose values those
        jobs produce. None when reading needs the values now (a gather, undefined elements to fill)."""
        if self.adv is not None:
            return None
        if self.wmask is not None and self.alloc.wmask is not None:
            if not self._covered():
                _sync(self.alloc)
                if not self.wmask.all():
                    return None
        elif self.stamp is not None and self.alloc.param < 0 and not stamped(self):
            return None
        if self.alloc.origin is not None:
            undefined.inherit(self.alloc)
        return self.data

    def write_pending(self, value: np.ndarray, src: Alloc) -> bool:
        """`write(value)` as a pipeline job behind the pending jobs of `src` (which produce `value`) and of
        this allocation: bookkeeping now (written masks, HBM write stamps), the copy on a worker. False
        (nothing done) when the write needs the values now: undefined data to trace, an index gather."""
        st = self.alloc.state
        if self.adv is not None or st.read_origin is not None or st.trace_only:
            return False
        if self.alloc.origin is not None and self.size == self.alloc.data.size:
            self.alloc.origin = None  # wholly overwritten by defined values
        dst, dt = self.data, self.dtype
        convert = dt is dtypes.tfloat32 or value.dtype.kind != dst.dtype.kind

        def job() -> None:
            dst[...] = dtypes.cast(value, dt) if convert else value

        st.pipeline.run(job, reads=(src,), writes=(self.alloc,), block=self._one_block())
        self.mark_written(None)
        if self.stamp is not None:
            _stamp(st, self.alloc, self.stamp, ..., None, False, self.region())
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
        return parent, _clip_masked(idx, parent.shape, m, grid), m, grid

    def region(self) -> coverage.Box | None:
        """This view as a box of its allocation (per axis [lo, hi)), or None when it is not one (or not known
        cheaply: gathers, reshaped, transposed or strided views)."""
        b = self.box
        if b is None and self.adv is None and self.data is self.alloc.data and self.size:
            b = self.box = coverage.whole(self.shape)
        return b

    def _covered(self) -> bool:
        """Every element of this view was written (the allocation's boxes say so, without its mask). Kept
        views (`_affine_view`) are read again and again: the first yes is remembered."""
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
        if self.alloc.writer is not None or self.alloc.readers:  # pending TensorE jobs use it
            st.pipeline.settle(writes=(self.alloc,))
        if st.read_origin is not None:
            undefined.taint(st, self, value, mask)
        elif mask is None and self.alloc.origin is not None and self.size == self.alloc.data.size:
            self.alloc.origin = None  # wholly overwritten by defined values
        if self.adv is not None:
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
                _settle(parent.alloc)
            if parent.stamp is not None:
                _stamp(st, parent.alloc, parent.stamp, idx, None, accumulate)
            return
        if not st.trace_only:
            v = dtypes.cast(value, self.dtype) if (self.dtype is dtypes.tfloat32 or value.dtype.kind != self.data.dtype.kind) else value
            if mask is None:
                self.data[...] = v
            else:
                np.copyto(self.data, v, where=fit_mask(mask, self.shape), casting="unsafe")
        self.mark_written(mask)
        if self.stamp is not None:
            _stamp(st, self.alloc, self.stamp, ..., mask, accumulate, self.region())

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
            _sync(self.alloc)
            return self.wmask
        parent, idx, _, _ = self.locate()
        if parent.wmask is None or parent.alloc.wmask is None:
            return None
        _sync(parent.alloc)
        return parent.wmask[idx].reshape(self.shape)

    def receive(self, result: Tensor, accumulate=False) -> None:
        """Write a dst-first instruction's fresh result here. A matmul's PSUM `accumulate`: True adds,
        False overwrites, None (the default) adds where this tile already holds values and overwrites
        where it does not, so the first matmul into a fresh allocation overwrites (REFERENCE §3.5)."""
        st = self.alloc.state
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

    def ap(self, pattern, offset=0, scalar_offset=None, vector_offset=None, indirect_dim=0, **_) -> Tensor:
        """nki 0.3+ access pattern over this tensor's row-major layout (see evidence.nki.access_pattern)."""
        st = self.alloc.state
        base = self.alloc.data
        if self.adv is not None:
            raise st.error("err_invalid_access_pattern", "'.ap' on an indexed gather; call it on the tensor")
        try:
            shape, steps = access_pattern.parse(pattern)
        except ValueError as exc:
            raise st.error("err_invalid_access_pattern", str(exc)) from None
        if not st.trace_only and not base.flags.c_contiguous:
            raise st.error("err_invalid_access_pattern", f"'.ap' needs a contiguous tensor, {self!r} is not")
        # where this view begins: its data, or in trace-only mode (no data) a bookkeeping array shaped alike
        probe = [(v, b) for v, b in ((self.data, base), (self.stamp, self.alloc.stamp), (self.lmask, self.alloc.lmask))
                 if v is not None and b is not None and not (st.trace_only and b is base)]
        start = int(offset) + (access_pattern.start_of(*probe[0]) if probe else 0)
        row = int(np.prod(self.alloc.shape[int(indirect_dim) + 1:], dtype=np.int64))
        if scalar_offset is not None:
            start += _scalar(scalar_offset) * row
        size = int(np.prod(self.alloc.shape, dtype=np.int64))
        if vector_offset is not None:
            if int(indirect_dim) != 0:
                raise st.error("err_invalid_access_pattern", "a vector_offset indexes dimension 0 only")
            rows = vector_offset.as_index().reshape(-1) if isinstance(vector_offset, Tensor) else np.asarray(vector_offset)
            if rows.size != shape[0]:
                raise st.error("err_invalid_access_pattern", f"vector_offset holds {rows.size} rows for "
                               f"{shape[0]} partitions")
            flat = access_pattern.gathered(start, shape, steps, rows.astype(np.int64), row)
            if flat.size and (flat.min() < 0 or flat.max() >= size):
                raise st.error("err_tensor_access_out_of_bound", f"access pattern {pattern} with vector_offset "
                               f"rows [{int(rows.min())}, {int(rows.max())}] leaves tensor {list(self.alloc.shape)}")
            idx = np.unravel_index(flat, self.alloc.shape)
            return Tensor(self.alloc, None, shape, 0, adv=(Tensor.whole(self.alloc), idx, shape))
        lo, hi = access_pattern.span(start, shape, steps)
        if lo < 0 or hi >= size:
            raise st.error("err_tensor_access_out_of_bound", f"access pattern {pattern} (offset {start}) addresses "
                           f"elements [{lo}, {hi}] of tensor {list(self.alloc.shape)} ({size} elements)")

        def sub(a):
            if a is None:
                return None
            if st.trace_only and a is base:
                return np.broadcast_to(np.zeros((), a.dtype), shape)
            return access_pattern.strided(a, start, shape, steps)

        a = self.alloc
        return Tensor(a, sub(base), shape, 0, sub(a.wmask), sub(a.stamp), sub(a.lmask))

    def mark_written(self, mask: np.ndarray | None = None) -> None:
        """Count this (basic) view's elements, within `mask`, as holding defined values from now on."""
        if self.wmask is None or self.alloc.wmask is None:
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
        _settle(alloc)

    def as_index(self) -> np.ndarray:
        """The tile's values used as an index (a runtime offset such as `x[i_p, idx[0, j] + i_f]`)."""
        if self.alloc.state.trace_only:
            return np.zeros(self.shape, np.int64)  # data-dependent: trace-only mode takes 0
        return undefined.index_values(self)

    # --- arithmetic operators (REFERENCE §3.6: overloads map to the element-wise ops) -------
    # With an index expression, a tile holding a runtime offset becomes part of the index.
    def _binary(self, o, op: str, index_fn):
        if isinstance(o, IndexExpr):
            return IndexExpr(self.as_index())._bin(o, index_fn)
        return dispatch.call(op, (self, o), {})

    def __add__(self, o): return self._binary(o, "add", np.add)
    def __radd__(self, o): return dispatch.call("add", (o, self), {})
    def __sub__(self, o): return self._binary(o, "subtract", np.subtract)
    def __rsub__(self, o): return dispatch.call("subtract", (o, self), {})
    def __mul__(self, o): return self._binary(o, "multiply", np.multiply)
    def __rmul__(self, o): return dispatch.call("multiply", (o, self), {})
    def __truediv__(self, o): return dispatch.call("divide", (self, o), {})
    def __rtruediv__(self, o): return dispatch.call("divide", (o, self), {})
    def __pow__(self, o): return dispatch.call("power", (self, o), {})
    def __rpow__(self, o): return dispatch.call("power", (o, self), {})
    def __mod__(self, o): return dispatch.call("mod", (self, o), {})
    def __rmod__(self, o): return dispatch.call("mod", (o, self), {})
    def __and__(self, o): return dispatch.call("bitwise_and", (self, o), {})
    def __rand__(self, o): return dispatch.call("bitwise_and", (o, self), {})
    def __or__(self, o): return dispatch.call("bitwise_or", (self, o), {})
    def __ror__(self, o): return dispatch.call("bitwise_or", (o, self), {})
    def __xor__(self, o): return dispatch.call("bitwise_xor", (self, o), {})
    def __rxor__(self, o): return dispatch.call("bitwise_xor", (o, self), {})
    def __lshift__(self, o): return dispatch.call("left_shift", (self, o), {})
    def __rshift__(self, o): return dispatch.call("right_shift", (self, o), {})
    def __invert__(self): return dispatch.call("invert", (self,), {})
    def __neg__(self): return dispatch.call("negative", (self,), {})
    def __abs__(self): return dispatch.call("abs", (self,), {})
    def __lt__(self, o): return dispatch.call("less", (self, o), {})
    def __le__(self, o): return dispatch.call("less_equal", (self, o), {})
    def __gt__(self, o): return dispatch.call("greater", (self, o), {})
    def __ge__(self, o): return dispatch.call("greater_equal", (self, o), {})
    # against None it is Python's test, not an element-wise op (library kernels: `if ids != None:`)
    def __eq__(self, o): return False if o is None else dispatch.call("equal", (self, o), {})  # type: ignore[override]
    def __ne__(self, o): return True if o is None else dispatch.call("not_equal", (self, o), {})  # type: ignore[override]
    __hash__ = object.__hash__

    def __iadd__(self, o): return dispatch.call("iadd", (self, o), {})
    def __isub__(self, o): return dispatch.call("inplace", (self, o, "subtract"), {})
    def __imul__(self, o): return dispatch.call("inplace", (self, o, "multiply"), {})
    def __itruediv__(self, o): return dispatch.call("inplace", (self, o, "divide"), {})


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


def _settle(alloc: Alloc) -> None:
    """Stop tracking initialisation once every element of the allocation was written."""
    if alloc.wmask is None:
        return
    if alloc.unwritten is None:  # after writes through index grids that may repeat elements
        alloc.unwritten = alloc.wmask.size - int(np.count_nonzero(alloc.wmask))
    if alloc.unwritten <= 0:
        pages = alloc.state.pages
        pages.mark_dense(alloc.data)  # a lazily mapped tensor written whole: zeroed in place for its next use
        if alloc.cov is None or alloc.cov.painted:  # a mask never painted holds untouched zero pages
            pages.mark_dense(alloc.wmask)
        alloc.wmask = None
        alloc.cov = None


def _sync(alloc: Alloc) -> None:
    """Before reading or changing an allocation's written-element mask: paint the boxes it defers."""
    if alloc.cov is not None:
        alloc.cov.sync()


def _clip_masked(idx: tuple, shape: tuple[int, ...], mask, view_shape) -> tuple:
    """Bounds-check advanced indices; masked-out positions may be out of range (never touched)."""
    out = []
    for i, (ix, dim) in enumerate(zip(idx, shape)):
        if isinstance(ix, np.ndarray) and ix.size:
            lo, hi = int(ix.min()), int(ix.max())
            if lo < 0 or hi >= dim:
                if mask is None:
                    raise _state.current().error(
                        "err_tensor_access_out_of_bound",
                        f"index range [{lo}, {hi}] exceed dimension size of {dim} (axis {i}); use a mask",
                    )
                m = full_mask(mask, view_shape)
                full = np.broadcast_to(ix, view_shape)
                bad = ((full < 0) | (full >= dim)) & m
                if bad.any():
                    raise _state.current().error(
                        "err_tensor_access_out_of_bound",
                        f"masked index range still exceeds dimension size of {dim} (axis {i})",
                    )
                ix = np.where(m, full, 0)
        out.append(ix)
    return tuple(out)


def _stamp(st, alloc: Alloc, stamp: np.ndarray, idx, mask=None, accumulate: bool = False, box=None) -> None:
    """Record the write path of an HBM write; report writes by different affine iterations. `box`: the
    region written, when the write is one box (whole, unmasked), which the stamp boxes may record alone."""
    pid = st.path_id()
    boxes = alloc.stamp_boxes
    prev = None if boxes is None or box is None or mask is not None else boxes.record(box, pid)
    if prev is not None:
        earlier = (prev,) if prev >= 0 else ()
    else:
        materialise_stamps(alloc)
        where = full_mask(mask, stamp.shape) if mask is not None and idx is ... else idx
        region = stamp[where]
        earlier = ()
        if not accumulate and region.size and region.max() >= 0 and not alloc.dep_reported:
            earlier = np.unique(region[region >= 0])[:64].tolist()
        if mask is not None and idx is ...:
            np.copyto(stamp, pid, where=fit_mask(mask, stamp.shape))
        else:
            stamp[idx] = pid
    if not accumulate and not alloc.dep_reported:
        for p in earlier:
            if p != pid and st.conflicting(p, pid):
                _output_dependency(st, alloc)
                break
    if alloc.param >= 0 and alloc.param not in st.param_writes:
        st.param_writes[alloc.param] = st.where()


def _output_dependency(st, alloc: Alloc) -> None:
    st.finding(
        "err_unexpected_output_dependencies",
        f"different iterations of an affine_range loop (or SPMD instances) write the same "
        f"elements of {alloc.name or 'an HBM tensor'} {list(alloc.shape)}; index the write by the "
        "loop variable or use sequential_range",
        "high",
    )
    alloc.dep_reported = True


def materialise_stamps(alloc: Alloc) -> None:
    """From now on the per-element stamp array alone records the HBM writes (see evidence.nki.stamp_boxes)."""
    if alloc.stamp_boxes is not None:
        alloc.stamp_boxes.materialise()
        alloc.stamp_boxes = None


def stamped(t: Tensor) -> bool:
    """Every element of this basic view of a kernel-created HBM tensor was written."""
    boxes = t.alloc.stamp_boxes
    if boxes is not None:
        box = t.region()
        if box is not None and boxes.covers(box):
            return True
        materialise_stamps(t.alloc)
    return bool((t.stamp >= 0).all())


def written_count(alloc: Alloc) -> int | None:
    """How many elements of a kernel-created HBM tensor were written, when the stamp boxes know it
    without the per-element array (None: count on `alloc.stamp`)."""
    return None if alloc.stamp_boxes is None else alloc.stamp_boxes.volume


def index(t: Tensor, key) -> Tensor:
    """t[key]: numpy-style basic views, or a lazy advanced access (REFERENCE §3.2)."""
    if not isinstance(key, tuple):
        key = (key,)
    v = _affine_view(t, key)
    return v if v is not None else _index_other(t, key)


def _index_other(t: Tensor, key: tuple) -> Tensor:
    """`index` for subscripts the compiler-style fast path (`_affine_view`) does not serve."""
    if key and isinstance(key[0], MaskExpr) and all(isinstance(k, MaskExpr) for k in key):
        # operand masking, `nl.matmul(x[i_f < 64], ...)`: the same view, with the elements it may use
        m = key[0].a
        for k in key[1:]:
            m = m & k.a
        v = Tensor(t.alloc, t.data, t.shape, t.pdim, t.wmask, t.stamp, t.lmask, t.adv)
        v.block = t.block
        v.valid = full_mask(m, t.shape)
        return v
    return index_general(t, key)


def index_general(t: Tensor, key: tuple) -> Tensor:
    """`index` without the compiler-style fast path (`_affine_view`): every kind of subscript."""
    nd = len(t.shape)
    adv = False
    basic = False
    comps = []
    forms = []  # the affine forms index expressions carry (strided.plan), None where unknown
    for k in key:
        forms.append(k.form if isinstance(k, IndexExpr) else None)
        if isinstance(k, IndexExpr):
            if not k.lifted and nd > 1:
                raise _state.current().error(
                    "err_1d_arange_not_supported",
                    "a 1-D nl.arange index must be lifted to 2-D with [:, None] or [None, :]",
                )
            adv = True
            comps.append(k.a)
        elif isinstance(k, Tensor):
            adv = True
            comps.append(undefined.index_values(k) if not t.alloc.state.trace_only else np.zeros(k.shape, np.int64))
        elif isinstance(k, MaskExpr):
            raise _state.current().error(
                "err_unsupported_expression_in_mask", "a mask in a subscript must be the whole subscript: x[mask]"
            )
        elif isinstance(k, (slice, type(Ellipsis))) or k is None:
            basic = True
            comps.append(k)
        elif isinstance(k, np.ndarray) and k.dtype.kind in "iu":
            adv = True
            comps.append(k)
        else:
            comps.append(int(k))
    if adv:
        if basic:
            raise _state.current().error(
                "err_unsupported_mixing_basic_advanced_tensor_indexing",
                f"subscript of {t!r} mixes slices with arange/mgrid indices; use index grids on every axis",
            )
        return _advanced(t, comps, forms)
    return _basic(t, tuple(comps))


def _affine_view(t: Tensor, key: tuple) -> Tensor | None:
    """The fast path of `index` for compiler-style subscripts (`x[i, k * 128 + nl.arange(128)[:, None], ...]`:
    integers and affine index expressions): the view the general path would make, from a recipe cached
    per subscript structure (strided.recipe); None when the general path must decide."""
    if t.adv is not None or t.data is None:
        return None
    at = _affine_subscript(key, t.shape)
    if at is None:
        return None
    # Kernels index the same tensor the same way again (each use of `acc[i_p, i_f]`, a weight tile per
    # output tile): the views cut before are kept on the tensor, valid while its arrays are the same.
    # Views are never changed once made (what instructions change is the allocation), so the same one serves.
    views = t.views
    made = None if views is None else views.get(at)
    if made is not None and made[0] is t.data and made[1] is t.wmask:
        return made[2]
    v = _cut_view(t, key, *at)
    if v is not None:
        if views is None or len(views) >= _VIEWS_KEPT:
            views = t.views = {}
        views[at] = (t.data, t.wmask, v)
    return v


def _affine_subscript(key: tuple, dims: tuple[int, ...]) -> tuple | None:
    """(structure, starts) of a subscript of integers and affine index expressions into `dims`: per index
    None (an integer) or the expression's `indexing.Structure`, and its start; None for any other subscript."""
    sig = []
    starts = []
    expr = False
    nd = len(dims)
    i = 0
    for k in key:
        if type(k) is IndexExpr and k.form is not None and (k.lifted or nd <= 1):
            sig.append(k.structure)
            starts.append(k.form[0])
            expr = True
        elif type(k) is int and i < nd and -dims[i] <= k < dims[i]:
            sig.append(None)
            starts.append(k % dims[i])
        else:
            return None
        i += 1
    return (tuple(sig), tuple(starts)) if expr else None


def _cut_view(t: Tensor, key: tuple, sig: tuple, starts: tuple) -> Tensor | None:
    """The view of `t` an affine subscript of structure `sig` addresses from `starts` (`_affine_subscript`),
    cut from its data and bookkeeping arrays; None when the general path must decide."""
    dims = t.shape
    rc = strided.recipe(dims, sig)
    if rc is None:
        return None
    if len(starts) < len(rc.steps):
        starts += (0,) * (len(rc.steps) - len(starts))  # the un-indexed trailing axes start at 0
    if not strided.in_range(rc, starts):
        return None  # out of range: a mask may make it legal (the general path's lazy gather)
    a = strided.cut
    ck = strided.cut_key(rc, starts)
    v = Tensor(t.alloc, a(t.data, rc, starts, ck), rc.shape, 0, None if t.wmask is None else a(t.wmask, rc, starts, ck),
               None if t.stamp is None else a(t.stamp, rc, starts, ck), None if t.lmask is None else a(t.lmask, rc, starts, ck))
    if t.pdim:  # the leading integers on block dimensions (`_block_ints`): their starts
        v.block = t.block + starts[:min(rc.leading_ints, t.pdim)]
    else:
        v.block = t.block
    if rc.extents is not None and t.data is t.alloc.data:
        v.box = (starts, tuple(map(add, starts, rc.extents)))
    v.cut = (rc, t.data, starts)
    return v


_VIEWS_KEPT = 64  # fast-path views kept per tensor


def _advanced(t: Tensor, comps: list, forms: list | None = None) -> Tensor:
    arrays = [c for c in comps if isinstance(c, np.ndarray)]
    if len(arrays) > 1 and any(a.ndim == 1 for a in arrays) and any(a.ndim > 1 for a in arrays):
        comps = [c[:, None] if isinstance(c, np.ndarray) and c.ndim == 1 else c for c in comps]
    if t.adv is not None:
        raise _state.current().error("err_unsupported_nested_indexing", "index an advanced access again: index the tensor once")
    if len(comps) > len(t.shape):
        raise _state.current().error("err_exceed_max_supported_dimension", f"too many indices for {t!r}")
    for i, c in enumerate(comps):
        if isinstance(c, int) and not -t.shape[i] <= c < t.shape[i]:
            raise _state.current().error(
                "err_tensor_access_out_of_bound", f"index {c} exceed dimension size of {t.shape[i]} (axis {i})"
            )
    rest = tuple(t.shape[len(comps):])
    if rest:  # un-indexed trailing axes become explicit grids, so indices, masks and values share one shape
        nb, r = len(np.broadcast_shapes(*[np.shape(c) for c in comps])), len(rest)
        comps = [c.reshape(c.shape + (1,) * r) if isinstance(c, np.ndarray) else c for c in comps]
        forms = list(forms or [None] * len(comps))
        for i, d in enumerate(rest):
            grid = [1] * (nb + r)
            grid[nb + i] = d
            comps.append(np.arange(d, dtype=np.int64).reshape(grid))
            forms.append((0, ((nb + i, 1),) if d > 1 else ()))
    grid = np.broadcast_shapes(*[np.shape(c) for c in comps])
    shape, kept = strided.tile_shape(grid, len(comps))
    affine = strided.plan(comps, t.shape, grid, forms) if t.data is not None else None
    if affine is not None:  # arange/mgrid expressions address memory at fixed strides: a view, not a gather
        dropped = tuple(i for i in range(len(grid)) if i not in kept)

        def sub(a):
            if a is None:
                return None
            v = strided.view(a, affine, grid)
            return np.squeeze(v, axis=dropped) if dropped else v

        v = Tensor(t.alloc, sub(t.data), tuple(shape), 0, sub(t.wmask), sub(t.stamp), sub(t.lmask))
    else:
        v = Tensor(t.alloc, None, tuple(shape), 0, adv=(t, tuple(comps), grid))
    v.block = t.block + _block_ints(comps, t.shape, t.pdim)
    return v


def _block_ints(key, shape, pdim: int) -> tuple:
    """The leading integer indices on block dimensions (those before the partition dimension)."""
    out = []
    for k, n in zip(key[:pdim], shape):
        if not isinstance(k, int):
            break
        out.append(k % n)
    return tuple(out)


def _partition_start_rule(t: Tensor, k: slice, n: int) -> str | None:
    """REFERENCE §1: 65-128 partitions start at 0; 33-64 at 0/64; 1-32 at 0/32/64/96; no stride.
    The violation's message, kept on the view until a compute engine uses it (not a DMA)."""
    start, stop, step = k.indices(n)
    size = len(range(start, stop, step))
    allowed = (0,) if size > 64 else (0, 64) if size > 32 else (0, 32, 64, 96)
    if step != 1 or start not in allowed:
        t.alloc.state.pstart_views = True
        return (f"access of {size} partitions starting at partition {start}" + (f" with stride {step}" if step != 1 else "")
                + f" of a {t.alloc.buffer} tile: compute-engine operands of {size} partitions must start at {allowed}"
                " and cannot stride")
    return None


def _basic(t: Tensor, key: tuple) -> Tensor:
    shape = t.shape
    if t.adv is not None:
        raise _state.current().error("err_unsupported_nested_indexing", "slice an advanced access: index the tensor once")
    # expand the ellipsis so positions line up with axes
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        raise _state.current().error("err_exceed_max_supported_dimension", f"too many indices for {t!r}")
    dropped_before_p = 0
    pstart = t.pstart
    onchip = t.alloc.buffer in ONCHIP
    keep = []
    for i, k in enumerate(key):
        n = shape[i]
        if isinstance(k, int):
            if not -n <= k < n:
                raise _state.current().error(
                    "err_tensor_access_out_of_bound", f"index {k} exceed dimension size of {n} (axis {i})"
                )
            if i < t.pdim:
                dropped_before_p += 1
            elif onchip:
                keep.append(i)  # an integer on a tile's partition/free axis keeps it as a unit axis: x[:, 0] is [P, 1]
        elif isinstance(k, slice):
            start, stop = k.start, k.stop
            if (stop is not None and stop > n) or (start is not None and start > n):
                raise _state.current().error(
                    "err_tensor_access_out_of_bound",
                    f"index range [{start or 0}, {stop}] exceed dimension size of {n} (axis {i})",
                )
            if i == t.pdim and t.alloc.buffer in ONCHIP and t.data is t.alloc.data and (start or k.step not in (None, 1)):
                pstart = _partition_start_rule(t, k, n)
    if keep:
        key = tuple(slice(k % shape[i], k % shape[i] + 1) if i in keep else k for i, k in enumerate(key))
    key = key + (Ellipsis,)  # all-integer keys still give (0-d) views, not scalars
    data = t.data[key]
    pd = max(t.pdim - dropped_before_p, 0)
    v = Tensor(
        t.alloc, data, data.shape, pd,
        None if t.wmask is None else t.wmask[key],
        None if t.stamp is None else t.stamp[key],
        None if t.lmask is None else t.lmask[key],
    )
    v.block = t.block + _block_ints(key, shape, t.pdim) if t.pdim else t.block
    v.pstart = pstart
    if t.data is t.alloc.data and data.size:
        v.box = _basic_box(key, shape)
    return v


def _basic_box(key: tuple, shape: tuple[int, ...]) -> tuple | None:
    """The box of the allocation (of `shape`) a basic subscript (integers, slices) addresses, or None
    when it is not one box (strided or reversed slices, new axes)."""
    lo, hi = [], []
    for k, n in zip(key, shape):
        if type(k) is int:
            lo.append(k % n)
            hi.append(k % n + 1)
        elif type(k) is slice:
            start, stop, step = k.indices(n)
            if step != 1 or stop <= start:
                return None
            lo.append(start)
            hi.append(stop)
        elif k is Ellipsis:
            break
        else:
            return None
    rest = shape[len(lo):]
    return tuple(lo) + (0,) * len(rest), tuple(hi) + tuple(rest)

