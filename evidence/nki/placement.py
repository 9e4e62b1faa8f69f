"""On-chip tensors the kernel places itself (`nl.ndarray(..., address=(partition, byte offset))`): which ones
share bytes, and reads that see bytes another of them wrote meanwhile.

Direct allocation puts tensors where the kernel says; two of them on the same SBUF or PSUM bytes are one
memory. The simulator keeps their values apart, so a kernel that still needs the first tensor's values when
it writes the second computes the right answer here and garbage on hardware. Reuse is legal once the first
tensor's values are dead: its bytes may be written by another tensor as long as it does not read them again
before writing them itself.

Each placement keeps its writes as boxes in the buffer's address space (partitions x bytes within a
partition) with the instruction that made them (`State.instr_seq`). A read of a placed tensor is reported
(`overlapping_placement`) when, for bytes it reads, its own last write came before another placement's write
to those bytes: the read sees the other tensor's values on hardware. The histories are boxes, not elements:
per placement at most `_MAX_WRITES` boxes are kept (past that, one box of the whole tensor at its latest
write), so a write through a view that is not a box counts as writing its bounding box.
"""

from __future__ import annotations

import math
import weakref

from evidence.nki import dtypes

_MAX_WRITES = 64

Box = tuple  # (partition lo, partition hi, byte lo, byte hi), half-open, in the buffer's address space


class Placement:
    __slots__ = ("buffer", "box", "neighbours", "writes", "site", "caller", "name", "__weakref__")

    def __init__(self, buffer: str, box: Box, site: tuple, caller: tuple | None, name: str) -> None:
        self.buffer = buffer
        self.box = box
        self.neighbours: weakref.WeakSet = weakref.WeakSet()  # live placements sharing bytes with this one
        self.writes: dict[Box, tuple[int, tuple]] = {}  # box written -> (instruction, file:line) of the last write
        self.site = site  # file:line that created the tensor
        self.caller = caller  # file:line in another file that called the code creating it (an allocator), or None
        self.name = name


def place(st, alloc, address, shape: tuple, pdim: int) -> None:
    """Record an on-chip tensor created at `address=(partition, byte offset)` and link it with the live
    placements it shares bytes with. An address that cannot be read leaves the tensor unplaced."""
    if st.trace_only:
        return
    try:
        partition, offset = int(address[0]), int(address[1])
    except (TypeError, ValueError, IndexError):
        return
    per_partition = dtypes.itemsize(alloc.dtype) * int(math.prod(shape[pdim + 1:]))
    if partition < 0 or offset < 0 or per_partition <= 0:
        return
    box = (partition, partition + shape[pdim], offset, offset + per_partition)
    p = Placement(alloc.buffer, box, st.where(), st.caller_in_other_file(), alloc.name or "")
    live = st.placements.setdefault(alloc.buffer, weakref.WeakSet())
    for other in live:
        if _overlap(box, other.box) is not None:
            p.neighbours.add(other)
            other.neighbours.add(p)
    live.add(p)
    alloc.placement = p


def access(st, c, written) -> None:
    """Instruction `c` (just recorded as `State.instr_seq`) read its inputs and wrote `written`: check the
    reads of placed tensors against their neighbours' writes, then record the write."""
    seq = st.instr_seq
    for t in c.ins:
        p = t.alloc.placement
        if p is not None and p.neighbours:
            _check_read(st, p, view_box(t, p), seq)
    if written is None:
        return
    p = written.alloc.placement
    if p is None:
        return
    box = view_box(written, p)
    if p.neighbours and written.alloc.buffer == "psum" and _accumulates(c):
        _check_read(st, p, box, seq)  # a matmul adds onto what its PSUM destination holds
    _record_write(st, p, box, seq)


def _accumulates(c) -> bool:
    """A matmul that adds onto the values its PSUM destination holds (nki 0.3+ `accumulate` None or True;
    False overwrites)."""
    return c.engine == "tensor" and c.p is not None and "accumulate" in c.p and c.p["accumulate"] is not False


def _record_write(st, p: Placement, box: Box, seq: int) -> None:
    writes = p.writes
    writes.pop(box, None)  # re-inserted last: the dict stays in write order
    writes[box] = (seq, st.where())
    if len(writes) > _MAX_WRITES:
        p.writes = {p.box: (seq, writes[box][1])}


def _check_read(st, p: Placement, box: Box, seq: int) -> None:
    """Report a read of `box` of placement `p` at instruction `seq` whose bytes another placement wrote after
    `p` last wrote them (both writes before this instruction)."""
    for other in list(p.neighbours):
        for obox, (t, oline) in other.writes.items():
            if t >= seq:
                continue
            clash = _overlap(box, obox)
            if clash is None:
                continue
            mine = _last_write_before(p, clash, t)
            if mine is None:
                continue
            w, wline = mine
            if any(w2 > t and _contains(b2, clash) for b2, (w2, _) in p.writes.items()):
                continue  # rewritten since the other tensor wrote there: its old values were dead
            st.finding("overlapping_placement", _message(p, other, clash, wline, oline), "high")
            return


def _last_write_before(p: Placement, clash: Box, t: int):
    best = None
    for b, (w, line) in p.writes.items():
        if w < t and _overlap(b, clash) is not None and (best is None or w > best[0]):
            best = (w, line)
    return best


def _message(p: Placement, other: Placement, clash: Box, wline: tuple, oline: tuple) -> str:
    def name(q: Placement) -> str:
        file, line = q.site
        label = f"'{q.name}' " if q.name else ""
        via = f" (called from {q.caller[0]}:{q.caller[1]})" if q.caller else ""
        return f"the {q.buffer.upper()} tensor {label}created at {file}:{line}{via}"

    p0, p1, b0, b1 = clash
    return (f"{name(p)} is read here, but {name(other)} is placed on the same bytes (partitions {p0}-{p1 - 1}, "
            f"bytes {b0}-{b1 - 1} of each) and wrote them at {oline[0]}:{oline[1]}, after the read tensor's last "
            f"write at {wline[0]}:{wline[1]}: both hold live values at once, so on hardware this read sees the "
            "other tensor's data. Place them apart, or finish with the first tensor before writing the second.")


def view_box(t, p: Placement) -> Box:
    """The addresses (partitions x bytes, in the buffer's address space) view `t` of a placed tensor covers:
    the bounding box of its elements, or the whole placement when the view is a gather or not a view of the
    tensor's storage."""
    alloc = t.alloc
    base, data = alloc.data, t.data
    if t.adv is not None or data is None or base is None or base.ndim < 2 or not base.flags.c_contiguous:
        return p.box
    row = base.strides[0]
    start = data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if start < 0 or start >= base.nbytes or row <= 0:
        return p.box
    part, byte = divmod(start, row)
    p_lo = p_hi = 0
    b_lo = b_hi = 0
    for n, stride in zip(data.shape, data.strides):
        if n <= 1:
            continue
        span = (n - 1) * stride
        if stride % row == 0:
            p_lo, p_hi = p_lo + min(0, span // row), p_hi + max(0, span // row)
        else:
            b_lo, b_hi = b_lo + min(0, span), b_hi + max(0, span)
    lo, hi = byte + b_lo, byte + b_hi + data.itemsize
    if lo < 0 or hi > row:
        return p.box  # the view's elements wrap across partitions: take the whole tensor
    pp, _, offset, _ = p.box
    return (pp + part + p_lo, pp + part + p_hi + 1, offset + lo, offset + hi)


def _overlap(a: Box | None, b: Box | None) -> Box | None:
    if a is None or b is None:
        return None
    p0, p1, b0, b1 = max(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), min(a[3], b[3])
    return (p0, p1, b0, b1) if p0 < p1 and b0 < b1 else None


def _contains(outer: Box, inner: Box) -> bool:
    return outer[0] <= inner[0] and inner[1] <= outer[1] and outer[2] <= inner[2] and inner[3] <= outer[3]
