"""What was written: the written-element masks of on-chip tensors and the write stamps of HBM tensors.

A tensor's `wmask` stops being tracked once every element was written (`settle`); boxes a
`Coverage` defers are painted before the mask is read (`sync`). HBM write stamps record which write
path (loop iteration, SPMD instance) last wrote each element, as boxes while they can
(evidence.nki.stamp_boxes), so writes of one element by different affine iterations are reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from evidence.nki import overwrites
from evidence.nki.indexing import fit_mask, full_mask

if TYPE_CHECKING:
    from evidence.nki.alloc import Alloc
    from evidence.nki.tensor import Tensor


def settle(alloc: Alloc) -> None:
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


def sync(alloc: Alloc) -> None:
    """Before reading or changing an allocation's written-element mask: paint the boxes it defers."""
    if alloc.cov is not None:
        alloc.cov.sync()


def stamp(st, alloc: Alloc, stamp: np.ndarray, idx, mask=None, accumulate: bool = False, box=None,
          indirect: bool = False) -> None:
    """Record the write path of an HBM write; report writes by different affine iterations. `box`: the
    region written, when the write is one box (whole, unmasked), which the stamp boxes may record alone.
    `indirect`: `idx` holds run-time index values (an index tile), which the compiler cannot check."""
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
                if indirect and prev is None:
                    indirect_write_conflict(st, alloc, np.unique(np.broadcast_to(idx[0], region.shape)[region == p]) if len(idx) else [])
                else:
                    output_dependency(st, alloc)
                break
    # after the dependency check: writes that collide across affine iterations are that defect, not wasted stores
    overwrites.wrote(st, alloc, stamp, idx, mask, accumulate, indirect, None if prev is None else box)
    if alloc.param >= 0 and alloc.param not in st.param_writes:
        st.param_writes[alloc.param] = st.where()


def output_dependency(st, alloc: Alloc) -> None:
    st.finding(
        "err_unexpected_output_dependencies",
        f"different iterations of an affine_range loop (or SPMD instances) write the same "
        f"elements of {alloc.name or 'an HBM tensor'} {list(alloc.shape)}; index the write by the "
        "loop variable or use sequential_range",
        "high",
    )
    alloc.dep_reported = True


def indirect_write_conflict(st, alloc: Alloc, rows) -> None:
    """Iterations wrote the same HBM elements through run-time index values (`out[idx_tile[i_p, n], i_f]` in an
    affine loop). The compiler checks output dependencies on static indices only (REFERENCE §2:
    `err_unexpected_output_dependencies` is a compile error), so this is no compile error: on hardware the order
    of the colliding writes is undefined, and the simulation keeps the last. A kernel routing padding tokens to one
    dummy row does this on purpose, so the finding names the rows."""
    rows = [int(r) for r in rows]
    shown = ", ".join(map(str, rows[:8])) + (f", ... ({len(rows)} in all)" if len(rows) > 8 else "")
    st.finding(
        "indirect_write_conflict",
        f"different iterations of an affine_range loop (or SPMD instances) write the same elements of "
        f"{alloc.name or 'an HBM tensor'} {list(alloc.shape)} through run-time (indirect) index values"
        + (f" (index {shown} on axis 0)" if rows else "")
        + ": no compile error (the compiler checks static indices only), but on hardware which write lands is "
        "undefined; the simulation keeps the last",
        "medium",
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
