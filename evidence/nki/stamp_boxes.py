"""HBM write stamps as boxes, while the writes are boxes that never partly overlap.

A kernel-created HBM tensor records, per element, the write path that last wrote it (`Alloc.stamp`:
the output-dependency check between affine iterations and SPMD instances, reads of never-written
elements, partly written outputs). Kernels store whole tiles, each once or always onto the same tile,
so the stamps of a 4096 x 5120 output are a few hundred boxes, not 21 M integers to fill, compare and
count. `StampBoxes` keeps them as (box, path id) while every write is a box (`Tensor.region()`) that is
either disjoint from every recorded box or equal to one; the stamp array itself (lazily mapped, never
touched meanwhile) is filled only when a write or read needs elements (`materialise`): a masked,
gathered, reshaped or partly overlapping write, a read not inside one written box. After that the
array alone is the truth, as before.
"""

from __future__ import annotations

import math
from operator import le, sub

import numpy as np

_MAX_BOXES = 4096  # past this, the per-element array answers (each write scans the boxes)
_SCAN = 24  # up to this many boxes are compared in Python, beyond that with numpy


class StampBoxes:
    __slots__ = ("stamp", "pids", "lo", "hi", "rows", "volume")

    def __init__(self, stamp: np.ndarray) -> None:
        self.stamp = stamp  # the allocation's per-element array, filled by `materialise`
        self.pids: dict[tuple, int] = {}  # box -> path id of its last write; the boxes are disjoint
        self.lo = self.hi = None  # per axis, the boxes' bounds (the first `rows` columns), for scans of many boxes
        self.rows = 0
        self.volume = 0  # elements written (the boxes are disjoint)

    def record(self, box, pid: int) -> int | None:
        """Stamp `box` with `pid`: the path id that wrote it last (-1: none), or None when the boxes
        cannot say (the box partly overlaps a recorded one, too many boxes): then nothing is recorded."""
        prev = self.pids.get(box)
        if prev is not None:
            self.pids[box] = pid
            return prev
        if len(self.pids) >= _MAX_BOXES or not self._apart(box):
            return None
        self.pids[box] = pid
        self.volume += math.prod(map(sub, box[1], box[0]))
        if len(self.pids) > _SCAN:
            self._add_row(box)
        return -1

    def _add_row(self, box) -> None:
        if self.lo is None:  # past _SCAN boxes: every box so far, one column per box, one row per axis
            self.lo = np.empty((len(box[0]), 2 * _SCAN), np.int64)
            self.hi = np.empty_like(self.lo)
            for b in self.pids:
                self._add_row(b)
            return
        if self.rows == self.lo.shape[1]:
            self.lo = np.concatenate((self.lo, np.empty_like(self.lo)), axis=1)
            self.hi = np.concatenate((self.hi, np.empty_like(self.hi)), axis=1)
        self.lo[:, self.rows], self.hi[:, self.rows] = box
        self.rows += 1

    def covers(self, box) -> bool:
        """Every element of `box` was written (it lies within one recorded box)."""
        if box in self.pids:
            return True
        lo, hi = box
        if self.lo is None:
            return any(all(map(le, b[0], lo)) and all(map(le, hi, b[1])) for b in self.pids)
        n = self.rows
        inside = np.ones(n, bool)
        for axis, (a, z) in enumerate(zip(lo, hi)):
            inside &= (self.lo[axis, :n] <= a) & (z <= self.hi[axis, :n])
        return bool(inside.any())

    def _apart(self, box) -> bool:
        """`box` shares no element with any recorded box."""
        lo, hi = box
        if self.lo is None:
            return all(any(map(le, hi, b[0])) or any(map(le, b[1], lo)) for b in self.pids)
        n = self.rows
        apart = np.zeros(n, bool)
        for axis, (a, z) in enumerate(zip(lo, hi)):
            apart |= (z <= self.lo[axis, :n]) | (self.hi[axis, :n] <= a)
        return bool(apart.all())

    def materialise(self) -> None:
        """Fill the per-element array: -1 (never written), each box its path id."""
        self.stamp.fill(-1)
        for (lo, hi), pid in self.pids.items():
            self.stamp[tuple(map(slice, lo, hi))] = pid
