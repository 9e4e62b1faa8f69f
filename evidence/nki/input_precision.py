"""Input precision: the float dtypes in which a kernel computes on each argument's data.

The error model's device-faithful reference (evidence.numerics.errormodel) rounds each input to the precision the
kernel computes it in. One dtype for every input (the kernel's lowest) over-rounds mixed precision: with fp8
weights and bf16 activations it rounded the activations to fp8 too, and a bound some 18x too loose let real defects
through. This tracker follows each argument's data through the regions the instructions read and write (allocation
id and block, as `accumulation.Chains` does) and notes, per argument, the dtype of every tile holding its data that
an instruction computes on:

- `held`: the arguments whose data a region holds unchanged, moved by copies (loads, stores, DMAs, casts,
  tensor_copy, transposes): a compute instruction (anything but a copy) reading such a tile computes on that
  argument's data in the tile's dtype (fp32 inputs loaded or cast to bf16 and then used are computed in bf16);
- `feeds`: the arguments a region's values derive from through any instruction: TensorE multiplies its operands
  in their own dtype, so a matmul reading a bf16 operand computed from an fp32 input (x * rstd * gamma stored in
  bf16, or a transpose through an identity matmul and a bf16 copy) computes on that input in bf16.

Other engines compute in fp32 whatever their tiles' dtypes, so a value a vector or scalar instruction computes and
stores in bf16 is not its inputs' rounding: it is an intermediate rounding (`accumulation.Roundings`) or the
output's own, and a low-precision result after the last matmul (a running sum kept in bf16, partial sums cast to
fp8) never lowers an input's precision, so the error model still sees it. A region written in part keeps the union
of old and new, so an argument can only be noted in more dtypes (a looser bound), never fewer.

Each argument is tracked with the box of it a view read (`(index, box)`; box None: the whole argument, or a view that
is not one box), so a bf16 copy of one slice lowers that slice only: a kernel casting the first of four column blocks
of an fp32 input to bf16 had the device reference round all four (e_dev twice the kernel's). Past `MAX_REGIONS` boxes
of one argument in a set the argument counts whole, as before.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import byte_bounds

from evidence.nki import dtypes
from evidence.nki.accumulation import covers_region

_EMPTY: frozenset = frozenset()
MAX_REGIONS = 8  # boxes of one argument kept apart; past this the argument counts whole (the bound only loosens)


def _bounded(s: frozenset) -> frozenset:
    """`s` with every argument that has more than MAX_REGIONS boxes in it replaced by the whole argument."""
    if len(s) <= MAX_REGIONS:
        return s
    count: dict[int, int] = {}
    for p, _ in s:
        count[p] = count.get(p, 0) + 1
    many = {p for p, n in count.items() if n > MAX_REGIONS}
    if not many:
        return s
    return frozenset(e for e in s if e[0] not in many) | frozenset((p, None) for p in many)


def _box(t) -> tuple | None:
    """The box (lo, hi) of its argument a view of it holds, from the view's numpy data alone (whichever path cut
    the view: kept views and fresh ones agree); None when it is not one step-1 box (a gather, a strided or
    reshaped view) or is the whole argument."""
    d, base = t.data, t.alloc.data
    if t.adv is not None or d is base or d.size == 0 or base.size == 0:
        return None
    if 0 in base.strides or (d.ndim and not all(s in base.strides for s in d.strides)):
        return None  # a trace-only placeholder (broadcast), or a view that is not a step-1 box
    (dlo, dhi), (blo, bhi) = byte_bounds(d), byte_bounds(base)
    offset = dlo - blo
    if dlo < blo or dhi > bhi or offset % base.itemsize:
        return None  # not a view of the argument's data
    lo = [int(i) for i in np.unravel_index(offset // base.itemsize, base.shape)]
    hi = [i + 1 for i in lo]
    for n, stride in zip(d.shape, d.strides):
        if n > 1:
            axis = base.strides.index(stride)
            hi[axis] = lo[axis] + n
    if any(h > m for h, m in zip(hi, base.shape)) or int(np.prod(np.subtract(hi, lo))) != d.size:
        return None
    return (tuple(lo), tuple(hi)) if (tuple(lo), tuple(hi)) != ((0,) * base.ndim, base.shape) else None


class InputPrecision:
    """Per region (allocation id -> block -> (held, feeds), sets of (argument index, box or None)); `seen` maps an
    argument's index to the (float dtype name, box or None) pairs its data was computed in."""

    __slots__ = ("regions", "beneath", "seen")

    def __init__(self) -> None:
        self.regions: dict[int, dict[tuple, tuple[frozenset, frozenset]]] = {}
        # allocation id -> block prefix -> the union over the longer blocks it prefixes: a block tensor has
        # thousands of blocks, and scanning them all on every read made a simulation ten times slower
        self.beneath: dict[int, dict[tuple, tuple[frozenset, frozenset]]] = {}
        self.seen: dict[int, set[tuple[str, tuple | None]]] = {}

    def _of(self, t) -> tuple[frozenset, frozenset]:
        held = feeds = _EMPTY
        if t.alloc.param >= 0:
            held = feeds = frozenset(((t.alloc.param, _box(t)),))
        blocks = self.regions.get(t.alloc.uid)
        if blocks:  # the blocks overlapping t's: its own, those it lies in (prefixes) and those in it
            key = t.block
            for i in range(len(key) + 1):
                hf = blocks.get(key[:i])
                if hf is not None:
                    held, feeds = held | hf[0], feeds | hf[1]
            hf = self.beneath[t.alloc.uid].get(key)
            if hf is not None:
                held, feeds = held | hf[0], feeds | hf[1]
        return held, feeds

    def write(self, out, sources, copied: bool, tensor_engine: bool = False) -> None:
        """`out` (a tile view, or None) was written from `sources` by a copy or by a computing instruction;
        `tensor_engine`: a TensorE instruction that multiplies its operands in their own dtype (a matmul)."""
        held = feeds = _EMPTY
        for t in sources:
            h, f = self._of(t)
            if not h and not f:
                continue
            if not copied and dtypes.is_float(t.dtype):
                name = dtypes.name(t.dtype)
                for p, box in (h | f if tensor_engine else h):
                    seen = self.seen.setdefault(p, set())
                    seen.add((name, box))
                    if len(seen) > 4 * MAX_REGIONS:  # too many boxes to keep apart: the whole argument
                        self.seen[p] = {(n, None) for n, _ in seen}
            held, feeds = held | h, feeds | f
        held, feeds = _bounded(held), _bounded(feeds)
        if not copied:
            held, feeds = _EMPTY, feeds | held
        if out is None or out.alloc.param >= 0:
            return
        blocks = self.regions.get(out.alloc.uid)
        if not feeds:
            if blocks and covers_region(out):  # wholly overwritten by values no argument feeds
                blocks.pop(out.block, None)
            return
        if blocks is None:
            blocks = self.regions[out.alloc.uid] = {}
            self.beneath[out.alloc.uid] = {}
        key = out.block
        old = blocks.get(key)
        if old is not None and not covers_region(out):
            held, feeds = held | old[0], feeds | old[1]
        blocks[key] = (held, feeds)
        beneath = self.beneath[out.alloc.uid]
        for i in range(len(key)):  # unions only grow (a block overwritten later stays in): a looser bound at most
            p = key[:i]
            h, f = beneath.get(p, (_EMPTY, _EMPTY))
            if not (held <= h and feeds <= f):
                beneath[p] = (_bounded(h | held), _bounded(f | feeds))

    def computed(self, tiles) -> bool:
        """Some tile holds values computed from the arguments rather than an argument's data moved unchanged (an
        fp32 PSUM result, a state updated every iteration): what a cast of them rounds, the device-faithful
        reference (which rounds arguments) does not."""
        for t in tiles:
            held, feeds = self._of(t)
            if feeds and not held:
                return True
        return False

    def free(self, uid: int) -> None:
        self.regions.pop(uid, None)
        self.beneath.pop(uid, None)

    def by_argument(self) -> dict[int, tuple[str, ...]]:
        """Argument index -> the sorted float dtype names its data was computed in (anywhere in it)."""
        return {p: tuple(sorted({n for n, _ in seen})) for p, seen in sorted(self.seen.items())}

    def by_region(self) -> dict[int, tuple[tuple[str, tuple | None], ...]]:
        """Argument index -> (dtype name, box (lo, hi) or None for the whole argument) pairs, sorted."""
        return {p: tuple(sorted(seen, key=lambda e: (e[0], e[1] is not None, e[1] or ())))
                for p, seen in sorted(self.seen.items())}
