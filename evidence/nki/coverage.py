"""Written (or loaded) regions of an allocation as boxes, so the common checks cost O(1) per instruction.

The allocation's boolean masks (`wmask`, `lmask`) stay the ground truth; a `Coverage` beside a mask
records the rectangular regions ("boxes": per axis a half-open range [lo, hi) in allocation
coordinates, kept as the tuples (lo, hi)) that whole, unmasked writes through box-shaped views covered. It answers two questions
without touching the mask:

- `covers(box)`: is every element of this box already written? (then a read is defined, a load is
  wholly redundant);
- `count(box)`: how many elements of this box were not written before? Known when the box lies
  inside a recorded box (0) or, while every write so far was a box (`exact`), when it overlaps no
  recorded box (its volume). Otherwise None: the caller counts on the mask.

The boxes only ever under-approximate what the mask holds (any write the boxes cannot describe —
masked, gathered, reshaped views — clears `exact`), so a "yes" is always right and a "don't know"
falls back to the masks. For the written-element mask of a lazily mapped on-chip tensor, painting
the boxes into the mask is deferred until something needs the mask (`sync`): a block tensor written
and read only in boxes never touches its mask's pages. Boxes are grouped by their integer coordinates on the block dimensions
(the axes before the partition dimension), and neighbours that together form a box are merged, so
the tiles of one block written in halves or columns read back as one box.
"""

from __future__ import annotations

import math
from operator import ge, le, sub

# (lo, hi): per allocation axis, the box spans lo[i] <= index < hi[i]; boxes are never empty
Box = tuple

_MAX_BOXES = 16  # per block: past this, new boxes are not recorded (the masks answer)


class Coverage:
    __slots__ = ("nblock", "mask", "blocks", "wide", "exact", "painted")

    def __init__(self, nblock: int, mask, lazy: bool = False) -> None:
        self.nblock = nblock  # leading block dimensions a box is grouped by
        self.mask = mask  # the allocation's boolean mask these boxes stand beside
        self.blocks: dict[tuple, list] = {}  # block coordinates -> boxes within that block
        self.wide: list = []  # boxes spanning several blocks
        self.exact = True  # the recorded boxes are exactly the covered elements
        # lazy: recorded boxes reach the mask only when something needs the mask (`sync`), so the mask of a
        # large lazily mapped tensor written only in boxes is never touched
        self.painted = not lazy

    def _key(self, box: Box) -> tuple | None:
        """The block coordinates of a box inside one block, or None for a box spanning several blocks."""
        n = self.nblock
        lo = box[0][:n]
        if n and sum(box[1][:n]) - sum(lo) != n:  # boxes are not empty: every extent is at least 1
            return None
        return lo

    def covers(self, box: Box) -> bool:
        """Every element of `box` is covered."""
        key = self._key(box)
        group = None if key is None else self.blocks.get(key)
        for boxes in (group or (), self.wide):
            for b in boxes:
                if _inside(box, b):
                    return True
        return False

    def count(self, box: Box) -> int | None:
        """How many elements of `box` are not covered yet; None when the boxes cannot tell (count on the
        mask after `sync`)."""
        if self.covers(box):
            return 0
        if not self.exact:
            return None
        key = self._key(box)
        if key is None and any(self.blocks.values()):
            return None  # a box across blocks: the blocks' boxes are not searched
        group = None if key is None else self.blocks.get(key)
        for boxes in (group or (), self.wide):
            for b in boxes:
                if not _apart(box, b):
                    return None
        return math.prod(map(sub, box[1], box[0]))

    def any(self) -> bool:
        """Some element is covered: a recorded box says so without the mask (boxes are never empty)."""
        if self.wide or any(self.blocks.values()):
            return True
        self.sync()
        return bool(self.mask.any())

    def sync(self) -> None:
        """Bring the mask up to date with every recorded box."""
        if not self.painted:
            self.painted = True
            for boxes in (*self.blocks.values(), self.wide):
                for b in boxes:
                    self._paint(b)

    def irregular(self) -> None:
        """A write the boxes cannot describe is about to change the mask: from now on the mask alone
        knows every covered element (the boxes still name covered ones)."""
        self.sync()
        self.exact = False

    def record(self, box: Box) -> None:
        """`box` is covered now (in the mask too, unless painting is deferred)."""
        key = self._key(box)
        boxes = self.wide if key is None else self.blocks.setdefault(key, [])
        if len(boxes) >= _MAX_BOXES:
            self.irregular()  # covered elements the boxes will not describe
            self._paint(box)
            return
        if self.painted:
            self._paint(box)
        boxes[:] = [b for b in boxes if not _inside(b, box)]
        merged = True
        while merged:
            merged = False
            for i, b in enumerate(boxes):
                joined = _join(box, b)
                if joined is not None:
                    box = joined
                    del boxes[i]
                    merged = True
                    break
        boxes.append(box)

    def _paint(self, box: Box) -> None:
        self.mask[tuple(map(slice, box[0], box[1]))] = True


def _inside(a: Box, b: Box) -> bool:
    """Box a lies within box b."""
    return all(map(ge, a[0], b[0])) and all(map(le, a[1], b[1]))


def _apart(a: Box, b: Box) -> bool:
    """Boxes a and b share no element."""
    return any(map(le, a[1], b[0])) or any(map(le, b[1], a[0]))


def _join(a: Box, b: Box) -> Box | None:
    """The box a and b form together when they match on every axis but one, where they touch or overlap."""
    (alo, ahi), (blo, bhi) = a, b
    axis = -1
    for i in range(len(alo)):
        if alo[i] != blo[i] or ahi[i] != bhi[i]:
            if axis >= 0:
                return None
            axis = i
    if axis < 0:
        return a
    if ahi[axis] < blo[axis] or bhi[axis] < alo[axis]:
        return None
    lo = alo[:axis] + (min(alo[axis], blo[axis]),) + alo[axis + 1:]
    hi = ahi[:axis] + (max(ahi[axis], bhi[axis]),) + ahi[axis + 1:]
    return lo, hi


def whole(shape: tuple[int, ...]) -> Box:
    return (0,) * len(shape), tuple(shape)
