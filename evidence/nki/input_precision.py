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
"""

from __future__ import annotations

from evidence.nki import dtypes
from evidence.nki.accumulation import covers_region

_EMPTY: frozenset = frozenset()


class InputPrecision:
    """Per region (allocation id -> block -> (held, feeds)); `seen` maps an argument's index to the float dtype
    names its data was computed in."""

    __slots__ = ("regions", "beneath", "seen")

    def __init__(self) -> None:
        self.regions: dict[int, dict[tuple, tuple[frozenset, frozenset]]] = {}
        # allocation id -> block prefix -> the union over the longer blocks it prefixes: a block tensor has
        # thousands of blocks, and scanning them all on every read made a simulation ten times slower
        self.beneath: dict[int, dict[tuple, tuple[frozenset, frozenset]]] = {}
        self.seen: dict[int, set[str]] = {}

    def _of(self, t) -> tuple[frozenset, frozenset]:
        held = feeds = _EMPTY
        if t.alloc.param >= 0:
            held = feeds = frozenset((t.alloc.param,))
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
                for p in (h | f if tensor_engine else h):
                    self.seen.setdefault(p, set()).add(name)
            held, feeds = held | h, feeds | f
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
                beneath[p] = (h | held, f | feeds)

    def free(self, uid: int) -> None:
        self.regions.pop(uid, None)
        self.beneath.pop(uid, None)

    def by_argument(self) -> dict[int, tuple[str, ...]]:
        """Argument index -> the sorted float dtype names its data was computed in."""
        return {p: tuple(sorted(names)) for p, names in sorted(self.seen.items())}
