"""Accumulation chains: how many element-wise additions in sequence fed a tile's values.

The error model's bound grows with the reduction length K (sqrt(K) u for fp32 accumulation). Matmul
contractions, free-axis reductions and scans give K from a single instruction; a running sum built
from element-wise adds (`carry = carry + x[:, j]` over a `sequential_range` or Python `range` loop,
or `acc[...] = nisa.tensor_tensor(acc, x, np.add)`) spreads its K over many instructions. This
tracker follows the data flow through the regions each instruction reads and writes (allocation id
and block, the trace's region keys):

- an addition (add/subtract element-wise ops, iadd, tensor_scalar/scalar_tensor_tensor with an add,
  DMA read-modify-write adds) writes one more than the deepest region it reads;
- a copy (loads, stores, tensor_copy, casts, transposes, binding a fresh result to a destination)
  passes the deepest source's depth on;
- anything else (products, activations, reductions, memsets, matmuls) starts a new quantity: depth 0
  (a matmul's own K is counted from its FLOPs, a reduction's from its shapes).

A write that covers only part of a region keeps the deeper of the old and the new depth, so one
region's depth can only overcount (a looser bound), never hide a chain. `longest` is the deepest
chain seen anywhere in the run: the error model takes it as one more reduction length.
"""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes

_ADD_FNS = frozenset((np.add, np.subtract))  # a set: `None in` a tuple of ufuncs asks each ufunc's __eq__
ADD_OPS = frozenset({"add", "subtract", "iadd", "inplace_add", "inplace_subtract", "nisa.dma_compute",
                     "atomic_rmw"})
COPY_OPS = frozenset({"load", "store", "copy", "nisa.tensor_copy", "tensor_copy", "nisa.tensor_copy_dynamic_src",
                      "nisa.tensor_copy_dynamic_dst", "astype", "broadcast_to", "transpose", "nisa.nc_transpose",
                      "nisa.dma_transpose", "load_transpose2d", "nisa.dma_copy", "psum_accumulate", "assign"})


def is_addition(op: str, p: dict) -> bool:
    """An instruction whose result is a sum of its inputs (one more rounding in an accumulation)."""
    if op in ADD_OPS:
        return True
    if op == "nisa.dma_copy":
        return p.get("rmw") is not None
    return p.get("fn") in _ADD_FNS or p.get("f0") in _ADD_FNS or p.get("f1") in _ADD_FNS


class Chains:
    """Depth per region (allocation id -> block -> depth), only for regions with depth > 0."""

    __slots__ = ("depth", "longest")

    def __init__(self) -> None:
        self.depth: dict[int, dict[tuple, int]] = {}
        self.longest = 0

    def _of(self, tiles) -> int:
        deepest = 0
        for t in tiles:
            blocks = self.depth.get(t.alloc.uid)
            if blocks:
                for b, d in blocks.items():
                    if d > deepest and blocks_overlap(b, t.block):
                        deepest = d
        return deepest

    def write(self, out, sources, added: bool, copied: bool) -> None:
        """`out` (a tile view) was written from `sources` by an addition, a copy or another op."""
        if out is None:
            return
        if added and not dtypes.is_int(out.dtype):
            d = self._of(sources) + 1
            if d > self.longest:
                self.longest = d
        elif copied:
            d = self._of(sources)
        else:
            d = 0
        blocks = self.depth.get(out.alloc.uid)
        if not d:
            if blocks and covers_region(out):  # wholly overwritten by a new quantity
                blocks.pop(out.block, None)
            return
        if blocks is None:
            blocks = self.depth[out.alloc.uid] = {}
        if d > blocks.get(out.block, 0) or covers_region(out):
            blocks[out.block] = d

    def free(self, uid: int) -> None:
        self.depth.pop(uid, None)


def blocks_overlap(a: tuple, b: tuple) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def covers_region(t) -> bool:
    """The view holds every element of its region (the allocation, or its block)."""
    if t.adv is not None:
        return False
    shape = t.alloc.shape
    region = 1
    for n in shape[len(t.block):]:
        region *= n
    return t.size == region



def _low_float(dt) -> bool:
    name = dtypes.name(dt)
    return name in ("bfloat16", "float16") or name.startswith("float8")


_MATMULS = frozenset({"nisa.nc_matmul", "matmul"})


def _free(t) -> int:
    n = 1
    for d in tuple(t.shape)[1:]:
        n *= int(d)
    return n


class Roundings:
    """How many roundings to a low-precision float (bf16, fp16, fp8) the values a kernel feeds TensorE went
    through: the error model's device reference rounds only the inputs and the output, while a bf16 kernel must
    hand TensorE bf16 operands, and stores the activation it computes for them (x * rstd, then * gamma in a
    norm before a projection) in bf16, each store one more rounding of the size of the output's.

    Per region (allocation id -> block -> (roundings, last, allowed)): a computing instruction writing a
    low-precision float writes one more rounding than the deepest region it reads; a copy, cast, transpose or
    addition passes the count on (a cast of an argument's data is a rounding the device reference makes too; a
    running sum kept in bf16 is a precision defect the error model must still see), except a cast of a value the
    kernel computed (fp32 PSUM or a state, cast to bf16 and fed on), which is one more. A reduction passes it on
    too, as does any per-partition column ([P, 1]: statistics such as a max, a sum, 1/sum or an exp bias kept in
    bf16 are a precision choice, not a stage TensorE needs) and an instruction writing fp32 or integers; one with no tile source (memset, iota) starts at
    zero. `allowed` is set where a matmul reads its operands: the roundings they went through are the ones the
    bound excuses, and it passes on from there. `longest` is the most allowed roundings in any value written to
    HBM, or for an output in a wider float dtype than these (fp32 from bf16 stages) every rounding it went
    through: its own rounding is then far below theirs, so the stages are its error, not a precision defect.
    Partial writes keep the deeper triple, so a count can only overcount (a looser bound, which the error model
    caps)."""

    __slots__ = ("depth", "longest", "stage_dtypes")

    def __init__(self) -> None:
        self.depth: dict[int, dict[tuple, tuple[int, int]]] = {}
        self.longest = 0
        self.stage_dtypes: set[str] = set()  # the dtypes of the counted roundings (their unit roundoffs size them)

    def _of(self, tiles) -> tuple[int, int]:
        total = allowed = 0
        for t in tiles:
            blocks = self.depth.get(t.alloc.uid)
            if blocks:
                for b, d in blocks.items():
                    if blocks_overlap(b, t.block):
                        total, allowed = max(total, d[0]), max(allowed, d[1])
        return total, allowed

    def write(self, out, sources, copied: bool, added: bool = False, op: str = "", computed: bool = False) -> None:
        """`computed`: some source holds values the kernel computed (not an argument's data moved unchanged), so
        a cast of it to a narrower float is a rounding the device reference does not make (it rounds inputs)."""
        if out is None:
            return
        total, allowed = self._of(sources)
        if op in _MATMULS:
            d = (total, max(allowed, total))
        elif (copied and computed and _low_float(out.dtype) and _free(out) > 1
              and any(dtypes.is_float(t.dtype) and not _low_float(t.dtype) for t in sources)):
            d = (total + 1, allowed)  # an fp32 state or PSUM result cast to bf16 and fed on
            self.stage_dtypes.add(dtypes.name(out.dtype))
        elif (copied or added or not _low_float(out.dtype) or _free(out) == 1
              or (sources and _free(out) * 2 <= max(map(_free, sources)))):
            d = (total, allowed)
        elif not sources:
            d = (0, 0)
        else:
            d = (total + 1, allowed)
            self.stage_dtypes.add(dtypes.name(out.dtype))
        # a low-precision output's own rounding matches the intermediate ones only before a matmul (`allowed`); an
        # output in a wider dtype (fp32 from bf16 stages) carries every stage it went through as its whole error
        stages = d[1] if _low_float(out.dtype) else d[0]
        if out.alloc.buffer not in ("sbuf", "psum") and stages > self.longest:
            self.longest = stages
        blocks = self.depth.get(out.alloc.uid)
        if d == (0, 0):
            if blocks and covers_region(out):
                blocks.pop(out.block, None)
            return
        if blocks is None:
            blocks = self.depth[out.alloc.uid] = {}
        if d > blocks.get(out.block, (0, 0)) or covers_region(out):
            blocks[out.block] = d

    def free(self, uid: int) -> None:
        self.depth.pop(uid, None)
