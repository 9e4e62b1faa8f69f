"""Lazily mapped zero-filled arrays for large on-chip tensors, reused within one simulation.

A block-dimension tensor such as `(12, 32, 5, par_dim(128), 1024)` fp32 is 1 GiB if allocated whole;
it lives in an anonymous mmap whose 4 KiB pages the OS maps on first touch, so it costs memory only
for the blocks the kernel writes (numpy's own large allocations ask for 2 MiB huge pages, which would
make a sparsely written tensor resident almost whole). Each fresh page costs a page fault (about 5 us
on this VM), and a kernel run as several SPMD instances allocates the same tensors again in every
instance: over half a GiB of fresh pages per instance in benchmark (e).

So a simulation keeps the mappings it made (`PagePool`, one per run): when an allocation of the same
size is asked for and a mapping is no longer used by any array, its resident pages are zeroed in
place (`mincore` says which) and the rest are dropped (`MADV_DONTNEED`, which reads back as zeros),
so it is indistinguishable from a fresh mapping, without faulting its pages in again. Without
`mincore`/`madvise` (not Linux), every allocation gets a fresh mapping.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import sys

import numpy as np

LAZY_BYTES = 4 << 20  # smaller arrays are plain np.zeros
_KEEP = 32  # mappings kept per simulation (used or free)
_PAGE = mmap.PAGESIZE

try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    _mincore = _libc.mincore
    _mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)
    _madvise = _libc.madvise
    _madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
except (OSError, AttributeError):
    _mincore = _madvise = None
_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", 4)


def _fresh(nbytes: int) -> tuple[mmap.mmap, np.ndarray]:
    # private: MADV_DONTNEED gives zero pages back (a shared anonymous mapping would keep its contents)
    mm = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20))
    return mm, np.frombuffer(mm, dtype=np.uint8)


def _clear(raw: np.ndarray, keep_dirty: bool) -> int:
    """Make a mapping read as zeros again; how many resident pages the last use left untouched, or -1 on
    failure. Resident pages holding data are zeroed in place (the next use likely writes the same blocks)
    when they are at least half of the mapping and `keep_dirty` is True; resident pages that hold only
    zeros were not written in the last use (only zeroed by the clear before it); everything else is dropped."""
    addr, n = raw.ctypes.data, raw.size
    pages = n // _PAGE  # mmap lengths of LAZY_BYTES and more: the last partial page is never kept
    vec = np.empty(-(-n // _PAGE), np.uint8)
    if _mincore(addr, n, vec.ctypes.data) != 0:
        return -1
    keep = (vec[:pages] & 1).astype(bool)
    idx = np.flatnonzero(keep)
    untouched = 0
    if idx.size:
        full = raw[:pages * _PAGE].reshape(pages, _PAGE)
        dirty = np.zeros(pages, bool)
        for lo in range(0, idx.size, 4096):  # bounded temporaries
            part = idx[lo:lo + 4096]
            dirty[part] = full[part].any(axis=1)
        n_dirty = int(np.count_nonzero(dirty))
        untouched = idx.size - n_dirty
        # a sparsely written mapping (some blocks of a block-dimension tensor) likely gets other blocks next
        keep = dirty if keep_dirty and 2 * n_dirty >= pages else np.zeros(pages, bool)
    edges = np.flatnonzero(np.diff(keep.astype(np.int8), prepend=0, append=0))  # run boundaries, alternating
    lo = 0
    for s, e in zip(edges[0::2].tolist(), edges[1::2].tolist()):
        raw[s * _PAGE:e * _PAGE] = 0
        if s > lo and _madvise(addr + lo * _PAGE, (s - lo) * _PAGE, _MADV_DONTNEED) != 0:
            return -1  # pages not resident (e.g. swapped out) must not keep old contents
        lo = e
    if lo * _PAGE < n and _madvise(addr + lo * _PAGE, n - lo * _PAGE, _MADV_DONTNEED) != 0:
        return -1
    return untouched


class PagePool:
    """The large lazily mapped arrays of one simulation, handed out again once nothing uses them."""

    def __init__(self) -> None:
        self.maps: list[tuple[mmap.mmap, np.ndarray]] = []  # (mapping, its uint8 array: the root of every view)
        # mappings whose uses write different pages each time (an SPMD instance's slice of a block-dimension
        # tensor): pages kept for them would only add to the resident set, so they are dropped whole
        self.moving: set[int] = set()

    def zeros(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes < LAZY_BYTES:
            return np.zeros(shape, dtype=dtype)
        raw = self._reuse(nbytes)
        if raw is None:
            mm, raw = _fresh(nbytes)
            self.maps.append((mm, raw))
            if len(self.maps) > _KEEP:
                self._forget_one()
        return raw.view(dtype).reshape(shape)

    def _reuse(self, nbytes: int) -> np.ndarray | None:
        if _mincore is None:
            return None
        for i, (mm, raw) in enumerate(self.maps):
            # unused: referenced only by this list, the loop's name and getrefcount's argument
            if len(mm) == nbytes and sys.getrefcount(raw) <= 3:
                untouched = _clear(raw, id(mm) not in self.moving)
                if untouched < 0:
                    del self.maps[i]  # could not clear it: leave it to the garbage collector
                    return None
                if untouched:
                    self.moving.add(id(mm))
                return raw
        return None

    def release(self) -> None:
        """Forget every mapping (the run is over): each is unmapped once no array uses it any more."""
        self.maps = []
        self.moving = set()

    def _forget_one(self) -> None:
        for i, (_, raw) in enumerate(self.maps):
            if sys.getrefcount(raw) <= 3:
                del self.maps[i]
                return
