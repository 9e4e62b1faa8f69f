"""Zero-filled tile arrays handed out again within one simulation once nothing uses them.

`nl.zeros` of a PSUM or SBUF tile in a loop allocates a fresh array per iteration ([128, 512] fp32 is
256 KiB). The heap those come from also takes back the result buffers that pending product jobs never
touch (`evidence.nki.product_batch`), so `np.zeros` (calloc) often lands on pages the process has
never written: it zeroes them through a page fault per 4 KiB. In benchmark (e) that was 63 faults and
about 130 us of the simulating thread per PSUM tile, against about 10 us to zero a tile whose pages
are resident. So a run keeps the zero tiles it handed out and gives one back, zeroed again, once no
array refers to it any more: the oldest first, as those are the ones pending jobs have let go of.
"""

from __future__ import annotations

import sys
from collections import deque

import numpy as np

MIN_BYTES = 64 << 10  # smaller arrays are cheap for malloc, and rarely land on untouched pages
MAX_BYTES = 4 << 20  # larger on-chip tensors come from the page pool (evidence.nki.page_pool)
_KEEP = 256  # tiles tracked per shape and dtype
_TRIES = 2  # of the oldest tracked tiles, how many to look at before allocating a new one


class TilePool:
    """The zero tiles of one simulation, by shape and dtype; a tile is free when only the pool holds it."""

    def __init__(self) -> None:
        self.tiles: dict[tuple, deque[np.ndarray]] = {}

    def zeros(self, shape: tuple[int, ...], dtype) -> np.ndarray:
        dtype = np.dtype(dtype)
        nbytes = dtype.itemsize
        for n in shape:
            nbytes *= int(n)
        if not MIN_BYTES <= nbytes <= MAX_BYTES:
            return np.zeros(shape, dtype=dtype)
        key = (shape, dtype)
        kept = self.tiles.get(key)
        if kept is None:
            kept = self.tiles[key] = deque()
        for _ in range(min(_TRIES, len(kept))):
            arr = kept.popleft()
            kept.append(arr)
            # held by the deque, `arr` and getrefcount's argument only: no view, tile or job uses it
            if sys.getrefcount(arr) <= 3:
                arr.fill(0)
                return arr
        arr = np.zeros(shape, dtype=dtype)
        kept.append(arr)
        if len(kept) > _KEEP:
            kept.popleft()  # no longer tracked; its users keep it alive as long as they need it
        return arr

    def release(self) -> None:
        """Forget every tile (the run is over)."""
        self.tiles = {}
