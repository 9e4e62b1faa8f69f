"""Lazily mapped zero-filled arrays for large on-chip tensors, reused within one simulation.

A block-dimension tensor such as `(12, 32, 5, par_dim(128), 1024)` fp32 is 1 GiB if allocated whole;
it lives in an anonymous private mmap whose 4 KiB pages the OS maps on first touch, so it costs memory
only for the blocks the kernel writes (numpy's own large allocations ask for 2 MiB huge pages, which
would make a sparsely written tensor resident almost whole). Each fresh page costs a page fault (about
5 us on this VM), and a kernel run as several SPMD instances allocates the same tensors again in every
instance: over half a GiB of fresh pages per instance in benchmark (e).

So a simulation keeps the mappings it made (`PagePool`, one per run) and hands one out again, for an
allocation of the same size, once no array uses it. It must then read as fresh zero pages: a mapping
whose elements were all written in its last use (`mark_dense`, told by the tensor when it was fully
written) is zeroed in place, its pages already resident; any other is dropped whole (`MADV_DONTNEED`:
private anonymous pages read back as zeros), as a fresh mapping would be. Storage whose unwritten
elements are never read (`zeros(..., unread=True)`: a tensor's data, whose never-written elements reads
see through its written-element mask as NaN; HBM write stamps) takes a mapping written whole as it is,
unzeroed: benchmark (e) writes a 201 MB tensor whole in each of its five SPMD instances. Only `mmap` is
used (no ctypes: the sandbox's monitor reports ctypes calls made while submitted code is on the stack).
"""

from __future__ import annotations

import math
import mmap
import sys

import numpy as np

LAZY_BYTES = 4 << 20  # smaller arrays are plain np.zeros
_KEEP = 32  # mappings kept per simulation (used or free)
_PRIVATE = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20)
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)


class _Mapping:
    __slots__ = ("mm", "raw", "dense")

    def __init__(self, nbytes: int) -> None:
        # private: MADV_DONTNEED gives zero pages back (a shared anonymous mapping would keep its contents)
        self.mm = mmap.mmap(-1, nbytes, flags=_PRIVATE)
        self.raw = np.frombuffer(self.mm, dtype=np.uint8)  # the root of every array handed out
        self.dense = False  # every element written in the current use

    def unused(self) -> bool:
        # referenced only by this object and getrefcount's argument
        return sys.getrefcount(self.raw) <= 2

    def clear(self, unread: bool = False) -> bool:
        """Make the mapping read as zeros again (`unread`: unless it was written whole, whose values its next
        use never reads before writing them); False when it cannot be."""
        if self.dense:
            if not unread:
                self.raw[...] = 0  # resident already: no page faults
        elif _DONTNEED is None:
            return False
        else:
            self.mm.madvise(_DONTNEED)
        self.dense = False
        return True


class PagePool:
    """The large lazily mapped arrays of one simulation, handed out again once nothing uses them."""

    def __init__(self) -> None:
        self.maps: list[_Mapping] = []

    def zeros(self, shape: tuple[int, ...], dtype, unread: bool = False) -> np.ndarray:
        """A zero-filled array; `unread`: its user never reads an element before writing it, so a mapping
        written whole in its last use may come back holding that use's values."""
        dtype = np.dtype(dtype)
        nbytes = math.prod(int(n) for n in shape) * dtype.itemsize
        if nbytes < LAZY_BYTES:
            return np.zeros(shape, dtype=dtype)
        m = self._reuse(nbytes, unread)
        if m is None:
            m = _Mapping(nbytes)
            self.maps.append(m)
            if len(self.maps) > _KEEP:
                self._forget_one()
        return m.raw.view(dtype).reshape(shape)

    def empty(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        """An array whose every element its user writes before reading (values left undefined)."""
        return self.zeros(shape, dtype, unread=True)

    def mark_dense(self, arr: np.ndarray | None) -> None:
        """Every element of `arr` (an array this pool handed out, whole) holds a written value now."""
        if arr is None or arr.nbytes < LAZY_BYTES:
            return
        addr = arr.__array_interface__["data"][0]
        for m in self.maps:
            if m.raw.__array_interface__["data"][0] == addr and m.raw.nbytes == arr.nbytes:
                m.dense = True
                return

    def _reuse(self, nbytes: int, unread: bool) -> _Mapping | None:
        for i, m in enumerate(self.maps):
            if len(m.mm) == nbytes and m.unused():
                if m.clear(unread):
                    return m
                del self.maps[i]  # could not clear it: leave it to the garbage collector
                return None
        return None

    def release(self) -> None:
        """Forget every mapping (the run is over): each is unmapped once no array uses it any more."""
        self.maps = []

    def _forget_one(self) -> None:
        for i, m in enumerate(self.maps):
            if m.unused():
                del self.maps[i]
                return
