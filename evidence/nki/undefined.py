"""Undefined data: where values read from never-written memory or masked-out results end up.

REFERENCE §3.2 "Masks" and §9.2: never-written elements and the masked-out part of a fresh result
hold NaN (integers: the sentinel). `Tensor.read` knows which elements are undefined (`wmask`) and
records a read of them as the instruction's `read_origin` (its kernel line). The results and
on-chip destinations the instruction writes carry that origin (`Alloc.origin`, per allocation);
NaN carries the element-wise dependency through arithmetic. Only undefined values reaching an HBM
write are the `uninitialized_read` finding, located at the origin: computing on the garbage rows of
a ragged tile and storing masked is valid NKI (the softmax and rmsnorm tutorials do it).
"""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes
from evidence.nki.indexing import full_mask

_HBM = ("hbm", "shared_hbm", "private_hbm")


def fill(values: np.ndarray, written: np.ndarray) -> np.ndarray:
    """`values` with its never-written elements as NaN (integers: the sentinel): on-chip memory is
    allocated as lazy zero pages, so what a read of undefined data returns is made explicit here."""
    kind = values.dtype.kind
    if kind in "iu":
        return np.where(written, values, np.asarray(dtypes.INT_SENTINEL, dtype=values.dtype))
    if kind == "b":
        return values
    return np.where(written, values, np.asarray(np.nan, dtype=values.dtype))


def inherit(alloc, stored=None) -> None:
    """A read of values derived from undefined data: the instruction inherits their origin. Not through a
    view reinterpreting the bits (`t.view(nl.float8_e4m3)` of fp32 scales): NaN no longer marks undefined
    elements there (defined fp32 bytes read as fp8 can be NaN patterns), so what it reaches cannot be told."""
    st = alloc.state
    if st.read_origin is None and (stored is None or stored == dtypes.storage(alloc.dtype)):
        st.read_origin = alloc.origin


def taint(st, view, value, mask) -> None:
    """A write by an instruction that read undefined data: on chip, the destination inherits the
    origin; into HBM, undefined values reaching it are the `uninitialized_read` finding."""
    alloc = view.alloc
    if alloc.buffer not in _HBM:
        if alloc.origin is None:
            alloc.origin = st.read_origin
        return
    v = np.asarray(value)
    if v.dtype.kind in "iub":  # the sentinel does not propagate: only a direct read of it counts
        hit = st.read_direct
    else:
        nan = np.isnan(v if v.dtype.kind == "f" else v.astype(np.float32))
        if mask is not None:
            nan = np.broadcast_to(nan, view.shape) & full_mask(mask, view.shape)
        hit = bool(nan.any())
    if hit:
        file, line = st.where()
        st.finding(
            "uninitialized_read",
            "uninitialised data read here (never-written memory, or the masked-out part of a masked "
            "instruction's result: NaN in simulation, garbage on hardware) reaches HBM tensor "
            f"{alloc.name + ' ' if alloc.name else ''}{list(alloc.shape)} written at {file}:{line}; "
            "mask the read or the store" + _spmd_note(st),
            "high",
            at=st.read_origin,
        )


def _spmd_note(st) -> str:
    """Instances of an SPMD grid run in order here, so shared HBM a later instance writes (a cross-core reduction's
    other half) is still unwritten when an earlier one reads it: say so, since the fix is then a barrier, not a mask."""
    n = int(np.prod(st.grid)) if st.grid else 1
    if n < 2 or st._spmd_flat() == n - 1:
        return ""
    return (f" (SPMD instance {list(st.program_id)} of a grid of {list(st.grid)}, the instances run in order: data a "
            "later instance writes is unwritten here, and on hardware nothing orders that write before this read "
            "unless a barrier does)")


def index_values(k) -> np.ndarray:
    """The values of an indirect index tile; undefined ones address garbage: always reported."""
    st = k.alloc.state
    origin, direct = st.read_origin, st.read_direct
    st.read_origin, st.read_direct = None, False
    vals = dtypes.cast(k.read(), np.int64)
    if st.read_direct:
        st.finding(
            "uninitialized_read",
            f"indirect index tile {list(k.shape)} holds uninitialised values (never written, or the masked-out "
            "part of a masked instruction's result): the access addresses garbage on hardware",
            "high",
        )
    st.read_origin, st.read_direct = origin, direct
    return vals

