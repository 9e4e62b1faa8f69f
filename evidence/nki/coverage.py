"""Written (or loaded) regions of an allocation as boxes, so the common checks cost O(1) per instruction.

The allocation's boolean masks (`wmask`, `lmask`) stay the ground truth; a `Coverage` beside a mask
records the rectangular regions ("boxes": per axis a half-open range [lo, hi) in allocation
coordinates) that whole, unmasked writes through box-shaped views covered. It answers two questions
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

Box = tuple  # ((lo, hi), ...) per allocation axis

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
        key = []
        for lo, hi in box[:self.nblock]:
            if hi - lo != 1:
                return None
            key.append(lo)
        return tuple(key)

    def _candidates(self, box: Box):
        key = self._key(box)
        group = None if key is None else self.blocks.get(key)
        return (group, self.wide) if group else (self.wide,)

    def covers(self, box: Box) -> bool:
        """Every element of `box` is covered."""
        key = self._key(box)
        group = None if key is None else self.blocks.get(key)
        if group:
            for b in group:
                if _inside(box, b):
                    return True
        for b in self.wide:
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
        if self._key(box) is None and any(self.blocks.values()):
            return None  # a box across blocks: the blocks' boxes are not searched
        for boxes in self._candidates(box):
            for b in boxes:
                if not _apart(box, b):
                    return None
        return _volume(box)

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
        if self.painted:
            self._paint(box)
        if len(boxes) >= _MAX_BOXES:
            self.irregular()  # covered elements the boxes will not describe
            self._paint(box)
            return
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
        self.mask[tuple(slice(lo, hi) for lo, hi in box)] = True


def _inside(a: Box, b: Box) -> bool:
    """Box a lies within box b."""
    for (alo, ahi), (blo, bhi) in zip(a, b):
        if alo < blo or ahi > bhi:
            return False
    return True


def _apart(a: Box, b: Box) -> bool:
    """Boxes a and b share no element."""
    for (alo, ahi), (blo, bhi) in zip(a, b):
        if ahi <= blo or bhi <= alo:
            return True
    return False


def _join(a: Box, b: Box) -> Box | None:
    """The box a and b form together when they match on every axis but one, where they touch or overlap."""
    axis = -1
    for i, (ra, rb) in enumerate(zip(a, b)):
        if ra != rb:
            if axis >= 0:
                return None
            axis = i
    if axis < 0:
        return a
    (alo, ahi), (blo, bhi) = a[axis], b[axis]
    if ahi < blo or bhi < alo:
        return None
    return a[:axis] + ((min(alo, blo), max(ahi, bhi)),) + a[axis + 1:]


def _volume(box: Box) -> int:
    n = 1
    for lo, hi in box:
        n *= hi - lo
    return n


def whole(shape: tuple[int, ...]) -> Box:
    return tuple((0, n) for n in shape)
