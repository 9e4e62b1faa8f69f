"""Allocations: the storage of one tensor in one buffer, and its bookkeeping.

`Alloc` owns the storage (numpy, in the declared dtype), the buffer kind and the bookkeeping
masks: `wmask` (which elements of an uninitialised on-chip tensor, or of a masked instruction's
fresh result, hold defined values), `stamp` (HBM tensors written by the kernel: which write path last
wrote each element, -1 = never) and `lmask` (HBM inputs: which elements were already loaded, for
redundant-read accounting); and what the worker pipeline needs for its hazards (evidence.nki.pipeline).
Views of an allocation are `Tensor`s (evidence.nki.tensor).
"""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes
from evidence.nki.coverage import Coverage

ONCHIP = ("sbuf", "psum")
HBM_KINDS = ("hbm", "shared_hbm", "private_hbm")


def _dummy(shape: tuple[int, ...], dt) -> np.ndarray:
    """Trace-only storage: a zero-stride view, no memory behind it."""
    return np.broadcast_to(np.zeros((), dtype=dtypes.storage(dt)), shape)


class Alloc:
    __slots__ = ("buffer", "dtype", "shape", "data", "wmask", "stamp", "lmask", "name", "param",
                 "mutable", "pdim", "state", "held", "origin", "dep_reported", "site", "uid", "writer", "readers",
                 "whole_writer", "block_writers", "unwritten", "cov", "lcov", "stamp_boxes", "zeros", "live",
                 "placed", "placement", "pend", "__weakref__")

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
        self.pend = None  # kernel-created HBM: the line of each element's pending (unread) write (evidence.nki.overwrites)
        self.origin = None  # file:line of an undefined read some of the values held here derive from
        self.dep_reported = False  # output dependency already reported
        self.site = (None, 0)  # kernel file:line that created it (HBM tensors)
        self.state = st
        self.uid = st.new_alloc_id()  # stable id of this allocation in the trace (dependencies, liveness)
        self.writer = None  # the pending pipeline job writing this allocation (evidence.nki.pipeline)
        self.readers: list = []  # pending pipeline jobs reading it
        self.whole_writer = None  # of those writers, the last that may have written anywhere in it
        self.block_writers: dict | None = None  # block index -> the last pending job writing only that block
        # every element holds +0.0 and nothing has written it since (an `nl.zeros` tile): a PSUM
        # accumulation group into it starts from zeros without reading it (evidence.nki.product_batch).
        # Cleared by the instruction whose destination it is (dispatch.call), by every store (Tensor.write,
        # receive, write_pending) and by any pipeline job that writes it
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
        self.placed = None  # SBUF at an explicit `address=`: its byte span per partition (State.place_sbuf)
        self.placement = None  # on-chip at an explicit `address=`: its bytes and writes (evidence.nki.placement)
        self.live = None  # PSUM: [first, last, banks] accessed (State.psum_range)
        if buffer in ONCHIP:
            per_part = dtypes.itemsize(dt)
            for i, n in enumerate(shape):
                if i != pdim:
                    per_part *= n
            self.held = st.alloc_onchip(buffer, per_part)
            if buffer == "psum":
                self.live = st.psum_range(self.uid, self.held)
            rec = st.recorder
            if rec.keep:
                rec.allocs[self.uid] = (buffer, self.held)

    def __del__(self) -> None:
        if self.placed is not None:  # its bytes are counted in the placed spans, not in held (create._place)
            self.state.unplace_sbuf(self.placed)
        elif self.held:
            self.state.free_onchip(self.buffer, self.held)
        if self.held:
            if self.live is not None:
                self.state.psum_close(self.uid)
            rec = self.state.recorder
            rec.chains.free(self.uid)
            rec.roundings.free(self.uid)
            rec.input_precision.free(self.uid)
            if rec.keep:
                rec.frees.append((len(rec.events), self.uid))
