"""HBM bytes a kernel stores and then stores again before anything reads them (dead stores).

A kernel-created HBM tensor keeps, per element, the kernel line of its last write while nothing has read
that write since (`Alloc.pend`; a line id indexes `State.write_lines`, 0 = nothing pending). A write
onto pending elements overwrites values no instruction ever read: those bytes moved for nothing (an
output stored inside the reduction loop that produces it, a zero fill stored over later). Any read (a
load, a DMA from it, a read-modify-write) consumes the pending write. Only writes through static
indices count: an indirect write (run-time index values) neither counts nor leaves its elements
pending, as which element it lands on is data (a padding token routed to one dummy row; collisions are
`indirect_write_conflict`). Writes of different SPMD instances are not compared (every instance starts
with nothing pending), and trace-only runs, whose index tiles hold no values, track nothing.

Like the write stamps (evidence.nki.stamp_boxes), the pending writes are boxes while the stamps are: a
dict of box -> line, since a write box is then either new or equal to a recorded one, so whole tiles
stored once cost no per-element work. A read that is not one box, or overlaps a pending box only in
part, consumes the whole pending box (never a false dead store; a partly read tile rewritten is then
missed). Once the stamps need elements, the pending marks become an int16 array addressed through the
positions of the tensor's stamp views (a view of the int32 stamps is located in the int16 array from its
offset and strides), so every view a kernel can build of the tensor reaches it.
"""

from __future__ import annotations

import math
from operator import le, sub
from typing import TYPE_CHECKING

import numpy as np
from numpy.lib.stride_tricks import as_strided

from evidence.nki.indexing import full_mask

if TYPE_CHECKING:
    from evidence.nki.alloc import Alloc


def _view(alloc: Alloc, stamp: np.ndarray) -> np.ndarray | None:
    """`alloc.pend` (the array) at the positions of `stamp`, a basic view of `alloc.stamp` (None: not one)."""
    base, pend = alloc.stamp, alloc.pend
    if stamp is base:
        return pend
    if not isinstance(stamp, np.ndarray) or stamp.itemsize != base.itemsize or not np.may_share_memory(stamp, base):
        return None
    size = base.itemsize
    off, rem = divmod(stamp.__array_interface__["data"][0] - base.__array_interface__["data"][0], size)
    if rem or any(s % size for s in stamp.strides):
        return None
    flat = pend.reshape(-1)
    return as_strided(flat[off:], stamp.shape, tuple(s // size * pend.itemsize for s in stamp.strides), writeable=True)


def _count(st, alloc: Alloc, line: int, elements: int) -> None:
    st.overwritten[line] = st.overwritten.get(line, 0) + elements * alloc.data.itemsize


def _as_array(st, alloc: Alloc) -> np.ndarray:
    """The pending marks as the per-element array from now on."""
    boxes = alloc.pend
    arr = alloc.pend = st.pages.zeros(alloc.stamp.shape, np.int16)
    for (lo, hi), line in (boxes or {}).items():
        arr[tuple(map(slice, lo, hi))] = line
    return arr


def wrote(st, alloc: Alloc, stamp: np.ndarray, idx, mask, accumulate: bool, indirect: bool, box=None) -> None:
    """An instruction wrote `stamp[idx]` (under `mask`) of `alloc`: count the pending bytes it overwrote. `box`:
    the region written, when the stamp boxes recorded it (new, or equal to a box written before)."""
    if st.trace_only:
        return
    if alloc.pend is None:
        alloc.pend = {}
        st.pending_allocs.append(alloc)
    line = 0 if indirect else st.write_line_id()
    count = not (accumulate or indirect or alloc.dep_reported)  # a reported output dependency is that defect
    pend = alloc.pend
    if isinstance(pend, dict):
        if box is not None:
            old = pend.pop(box, 0)
            if old and count:
                _count(st, alloc, old, math.prod(map(sub, box[1], box[0])))
            if line:
                pend[box] = line
            return
        pend = _as_array(st, alloc)
    view = _view(alloc, stamp)
    if view is None:
        return
    if idx is ...:
        where = None if mask is None else full_mask(mask, view.shape)
        prev = view if where is None else view[where]
    else:
        where = idx
        prev = view[idx]
    if count and prev.size:
        hit = prev[prev > 0]
        if hit.size:
            ids, counts = np.unique(hit, return_counts=True)
            for i, n in zip(ids.tolist(), counts.tolist()):
                _count(st, alloc, i, n)
    if where is None:
        view[...] = line
    else:
        view[where] = line


def consumed(alloc: Alloc, stamp: np.ndarray, idx=..., mask=None, region=None) -> None:
    """An instruction read `stamp[idx]` of `alloc` (`region`: the view as a box, when it is one): the pending
    writes there were used."""
    pend = alloc.pend
    if pend is None or isinstance(pend, dict) and not pend:
        return
    if isinstance(pend, dict):
        if region is None:  # not a box: every pending write may be read
            pend.clear()
            return
        lo, hi = region
        for b in [b for b in pend if not (any(map(le, hi, b[0])) or any(map(le, b[1], lo)))]:
            del pend[b]
        return
    view = _view(alloc, stamp)
    if view is None:  # a view this module cannot locate (a reinterpreting one): every pending write may be read
        pend[...] = 0
        return
    if idx is not ...:
        view[idx] = 0
    elif mask is None:
        view[...] = 0
    else:
        view[full_mask(mask, view.shape)] = 0


def read_untracked(alloc: Alloc) -> None:
    """An instruction read `alloc` through a view without stamps (a dtype view, `.ap(dtype=)`): every pending
    write may be read."""
    pend = alloc.pend
    if isinstance(pend, dict):
        pend.clear()
    elif pend is not None:
        pend[...] = 0


def new_instance(st) -> None:
    """A new SPMD instance starts: writes of the earlier ones are not compared with its own."""
    for alloc in st.pending_allocs:
        if isinstance(alloc.pend, dict):
            alloc.pend.clear()
        else:
            alloc.pend[...] = 0


def finding(st) -> None:
    """One finding for the run, naming the lines whose stores were overwritten unread."""
    if not st.overwritten:
        return
    total = sum(st.overwritten.values())
    written = st.recorder.agg.writes[0]
    share = total / written if written else 0.0
    top = sorted(st.overwritten.items(), key=lambda kv: -kv[1])
    lines = [st.write_lines[i - 1] for i, _ in top]
    file, line = lines[0]
    names = ", ".join(f"{f or '?'}:{n} ({_human(b)})" for (f, n), (_, b) in zip(lines[:4], top[:4]))
    st.finding(
        "hbm_store_overwritten",
        f"{_human(total)} of the {_human(written)} stored to HBM ({share:.0%}) were stored again before anything "
        f"read them, so those stores moved bytes for nothing (stores overwritten unread, by line: {names}); store "
        "each result once, after the loop that produces it",
        "medium" if share >= 0.1 else "low",
        at=(file, line),
    )


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
