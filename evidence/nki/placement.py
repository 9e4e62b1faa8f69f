"""On-chip tensors the kernel places itself: which ones share bytes, and reads that see bytes another of them
wrote meanwhile.

Two ways of placing exist. nki 0.3+ takes `nl.ndarray(..., address=(partition, byte offset))`: one physical
tile. The beta dialect's direct allocation (`buffer=ncc.sbuf.alloc(func)`, `ncc.sbuf.mod_alloc(base_addr=...,
num_free_tiles=...)`, `ncc.psum.alloc(func)`, `ncc.psum.mod_alloc(base_bank=..., num_bank_tiles=...)`) places
each logical block of a tensor (the dimensions before `par_dim`) as its own physical tile: the allocator is
called per block index, as the compiler calls it, and a modulo allocator rotates the blocks over its
`num_free_tiles` (PSUM: `num_bank_tiles`) tiles, so blocks `i` and `i + n` of one tensor share bytes. PSUM
addresses are `bank * 2048 + byte` within a partition, as nki 0.3+'s `address=` writes them.

Direct allocation puts tensors where the kernel says; two physical tiles on the same SBUF or PSUM bytes are
one memory. The simulator keeps their values apart, so a kernel that still needs the first tile's values when
it writes the second computes the right answer here and garbage on hardware. Reuse is legal once the first
tile's values are dead: its bytes may be written by another tile as long as it does not read them again
before writing them itself (the documented double buffering: block `i + 2` loaded after block `i` was
consumed).

Tiles on the same bytes share a `Slot` (one per distinct physical box of a buffer; slots whose boxes
overlap without being equal are linked). Each slot keeps, per byte box, the last tile that wrote it, with
the instruction that did (`State.instr_seq`): a write replaces what it covers in its slot and in the slots
linked to it. A read of a placed tile is reported (`overlapping_placement`) when bytes it reads were last
written by another live tile, after the read tile's own last write to them: the read sees the other tile's
values on hardware. So a read looks only at the writes to its own bytes, however many blocks a modulo
allocator rotates over them (a public pipelined attention puts 2,048-block PSUM tensors on 8 banks). Each
tile's own writes are kept too, for the message: per tile at most `_MAX_WRITES` boxes (past that, their
bounding box at the latest write). The histories are boxes, not elements: a write through a view that is
not a box counts as writing its bounding box within each tile it touches, and a slot whose history splits
into more than `_MAX_PIECES` boxes stops being checked (nothing is reported from it).
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from evidence.nki import dtypes

_MAX_WRITES = 64
_MAX_BLOCKS = 4096  # a tensor with more logical blocks stays unplaced (no reads checked, no writes recorded)
_MAX_LINKED = 256  # so does one whose tile would overlap more distinct boxes than this without equalling them
_MAX_PIECES = 256  # boxes of one slot's last-writer history; past that the slot is no longer checked
_MAX_GATHER = 1 << 22  # elements of a gather resolved per tile; past that, the whole tiles it touches
PSUM_BANK_BYTES = 2048

Box = tuple  # (partition lo, partition hi, byte lo, byte hi), half-open, in the buffer's address space


class Placement:
    """One physical tile: a tensor placed by `address=`, or one logical block of a directly allocated one."""

    __slots__ = ("buffer", "box", "slot", "writes", "site", "caller", "name", "block", "__weakref__")

    def __init__(self, buffer: str, box: Box, site: tuple, caller: tuple | None, name: str,
                 block: tuple | None = None) -> None:
        self.buffer = buffer
        self.box = box
        self.slot: Slot | None = None  # the bytes it sits on, shared with every tile on them
        self.writes: dict[Box, tuple[int, tuple]] = {}  # box written -> (instruction, file:line) of the last write
        self.site = site  # file:line that created the tensor
        self.caller = caller  # file:line in another file that called the code creating it (an allocator), or None
        self.name = name  # the tensor's name
        self.block = block  # the logical block index this tile holds (directly allocated block tensors)


class Slot:
    """The tiles placed on one box of a buffer, the slots overlapping it, and who last wrote its bytes."""

    __slots__ = ("box", "tiles", "linked", "last", "lost")

    def __init__(self, box: Box) -> None:
        self.box = box
        self.tiles: weakref.WeakSet = weakref.WeakSet()  # the live tiles on this box
        self.linked: list[Slot] = []  # slots whose boxes overlap this one without being equal
        self.last: dict[Box, tuple] = {}  # disjoint boxes -> (weakref to the tile, instruction, file:line) of the last write
        self.lost = False  # the history outgrew _MAX_PIECES: reads here are no longer checked

    def shared(self) -> bool:
        return len(self.tiles) > 1 or bool(self.linked)

    def wrote(self, box: Box, ref, seq: int, line: tuple) -> None:
        """`box` (within this slot or not) was written by the tile `ref` at instruction `seq`."""
        mine = _overlap(box, self.box)
        if mine is None or self.lost:
            return
        last = {}
        for b, v in self.last.items():
            if _overlap(b, mine) is None:
                last[b] = v
            else:
                for piece in _subtract(b, mine):
                    last[piece] = v
        last[mine] = (ref, seq, line)
        if len(last) > _MAX_PIECES:
            self.lost, last = True, {}
        self.last = last


class Placed:
    """The physical tiles of one allocation: one per logical block (linear block index), or a single one.
    `tile` is the bytes of one logical block in the allocation's own storage, `row` those of one partition."""

    __slots__ = ("tiles", "tile", "row")

    def __init__(self, tiles: list[Placement], tile: int, row: int) -> None:
        self.tiles = tiles
        self.tile = tile
        self.row = row


def place(st, alloc, address, shape: tuple, pdim: int) -> None:
    """Record an on-chip tensor created at `address=(partition, byte offset)` and link it with the live
    placements it shares bytes with. An address that cannot be read leaves the tensor unplaced."""
    if st.trace_only:
        return
    try:
        partition, offset = int(address[0]), int(address[1])
    except (TypeError, ValueError, IndexError):
        return
    _settle(st, alloc, shape, pdim, [(partition, offset)], [None])


def place_blocks(st, alloc, locate, shape: tuple, pdim: int) -> None:
    """Record a tensor of the beta dialect's direct allocation: `locate(block index, partitions, bytes per
    partition)` -> (partition, byte address) of each logical block's physical tile, called per block index
    as the compiler calls the allocator. A function that fails or gives no integers leaves the tensor
    unplaced (the compiler would reject it; nothing is concluded from it here)."""
    if st.trace_only:
        return
    blocks = shape[:pdim]
    if math.prod(blocks) > _MAX_BLOCKS:
        return
    per_partition = dtypes.itemsize(alloc.dtype) * int(math.prod(shape[pdim + 1:]))
    try:
        where = [tuple(int(v) for v in locate(tuple(int(i) for i in idx), shape[pdim], per_partition))
                 for idx in np.ndindex(*blocks)]
    except Exception:  # noqa: BLE001 - the kernel's own allocation function; its failure is the compiler's to report
        return
    _settle(st, alloc, shape, pdim, where, list(np.ndindex(*blocks)) if pdim else [None])


def _settle(st, alloc, shape: tuple, pdim: int, where: list, blocks: list) -> None:
    per_partition = dtypes.itemsize(alloc.dtype) * int(math.prod(shape[pdim + 1:]))
    parts = shape[pdim]
    if per_partition <= 0 or any(len(w) != 2 or w[0] < 0 or w[1] < 0 for w in where):
        return
    site, caller = st.where(), st.caller_in_other_file()
    slots: dict[Box, Slot] = st.placements.setdefault(alloc.buffer, {})
    tiles = [Placement(alloc.buffer, (partition, partition + parts, offset, offset + per_partition), site, caller,
                       alloc.name or "", blocks[k]) for k, (partition, offset) in enumerate(where)]
    for box in list(slots):
        if not slots[box].tiles:  # every tile on it is gone: a tile placed there later starts a fresh history
            dead = slots.pop(box)
            for other in dead.linked:
                other.linked.remove(dead)
    fresh = {p.box: Slot(p.box) for p in tiles if p.box not in slots}
    # a modulo allocator puts thousands of blocks on a few boxes: slots are linked between distinct boxes
    for box, slot in fresh.items():
        slot.linked = [q for b, q in slots.items() if _overlap(box, b) is not None]
        slot.linked += [q for b, q in fresh.items() if b != box and _overlap(box, b) is not None]
        if len(slot.linked) > _MAX_LINKED:
            return  # each write would update hundreds of histories: left unplaced, as past _MAX_BLOCKS
    for box, slot in fresh.items():
        for q in slot.linked:
            if q.box not in fresh:
                q.linked.append(slot)
        slots[box] = slot
    for p in tiles:
        p.slot = slots[p.box]
        p.slot.tiles.add(p)
    itemsize = alloc.data.itemsize if alloc.data is not None else dtypes.itemsize(alloc.dtype)
    row = itemsize * int(math.prod(shape[pdim + 1:]))
    alloc.placement = Placed(tiles, row * parts, row)


def access(st, c, written) -> None:
    """Instruction `c` (just recorded as `State.instr_seq`) read its inputs and wrote `written`: check the
    reads of placed tensors against their neighbours' writes, then record the write."""
    seq = st.instr_seq
    for t in c.ins:
        placed = t.alloc.placement
        if placed is not None:
            for p, box in regions(t, placed):
                if p.slot.shared():
                    _check_read(st, p, box, seq)
    if written is None or written.alloc.placement is None:
        return
    _write(st, written, written.alloc.buffer == "psum" and _accumulates(c), seq)


def bind(st, c) -> None:
    """A result bound into a placed tensor without an instruction of its own (the beta dialect's `t[idx] =
    nisa.nc_matmul(...)`, `t[idx] = nl.load(...)`, PSUM `t[idx] += ...`): the write of the instruction that
    made the value; a PSUM `+=` also reads the values it adds onto."""
    t = c.out
    if t.alloc.placement is None or c.op not in ("assign", "psum_accumulate"):
        return  # creating a tensor writes nothing
    _write(st, t, c.op == "psum_accumulate", st.instr_seq)


def _write(st, t, reads_old: bool, seq: int) -> None:
    for p, box in regions(t, t.alloc.placement):
        if reads_old and p.slot.shared():
            _check_read(st, p, box, seq)  # a matmul adds onto what its PSUM destination holds
        _record_write(st, p, box, seq)


def _accumulates(c) -> bool:
    """A matmul that adds onto the values its PSUM destination holds (nki 0.3+ `accumulate` None or True;
    False overwrites)."""
    return c.engine == "tensor" and c.p is not None and "accumulate" in c.p and c.p["accumulate"] is not False


def _record_write(st, p: Placement, box: Box, seq: int) -> None:
    line = st.where()
    writes = p.writes
    writes.pop(box, None)  # re-inserted last: the dict stays in write order
    writes[box] = (seq, line)
    if len(writes) > _MAX_WRITES:
        bound = (min(b[0] for b in writes), max(b[1] for b in writes), min(b[2] for b in writes),
                 max(b[3] for b in writes))
        p.writes = {bound: (seq, line)}
    slot = p.slot
    if slot.shared():
        ref = weakref.ref(p)
        slot.wrote(box, ref, seq, line)
        for other in slot.linked:
            other.wrote(box, ref, seq, line)


def _check_read(st, p: Placement, box: Box, seq: int) -> None:
    """Report a read of `box` of placement `p` at instruction `seq` whose bytes another live placement wrote
    last, after `p` last wrote them (both writes before this instruction). The message names that placement
    (whose values the read sees on hardware); of several, the one that wrote first."""
    slot = p.slot
    if slot.lost:
        return
    found = None
    for obox, (ref, t, oline) in slot.last.items():
        other = ref()
        if other is None or other is p or t >= seq or (found is not None and t >= found[0]):
            continue
        clash = _overlap(box, obox)
        if clash is None:
            continue
        mine = _last_write_before(p, clash, t)
        if mine is not None:
            found = (t, other, clash, mine[1], oline)
    if found is not None:
        _, other, clash, wline, oline = found
        st.finding("overlapping_placement", _message(p, other, clash, wline, oline), "high")


def _last_write_before(p: Placement, clash: Box, t: int):
    best = None
    for b, (w, line) in p.writes.items():
        if w < t and _overlap(b, clash) is not None and (best is None or w > best[0]):
            best = (w, line)
    return best


def _subtract(a: Box, cut: Box) -> list[Box]:
    """`a` without `cut`, as disjoint boxes."""
    o = _overlap(a, cut)
    if o is None:
        return [a]
    out = []
    if a[0] < o[0]:
        out.append((a[0], o[0], a[2], a[3]))
    if o[1] < a[1]:
        out.append((o[1], a[1], a[2], a[3]))
    if a[2] < o[2]:
        out.append((o[0], o[1], a[2], o[2]))
    if o[3] < a[3]:
        out.append((o[0], o[1], o[3], a[3]))
    return out


def _message(p: Placement, other: Placement, clash: Box, wline: tuple, oline: tuple) -> str:
    def name(q: Placement) -> str:
        file, line = q.site
        label = f"'{q.name}' " if q.name else ""
        via = f" (called from {q.caller[0]}:{q.caller[1]})" if q.caller else ""
        block = f"block {q.block} of " if q.block is not None else ""
        return f"{block}the {q.buffer.upper()} tensor {label}created at {file}:{line}{via}"

    p0, p1, b0, b1 = clash
    return (f"{name(p)} is read here, but {name(other)} is placed on the same bytes (partitions {p0}-{p1 - 1}, "
            f"bytes {b0}-{b1 - 1} of each) and wrote them at {oline[0]}:{oline[1]}, after the read tensor's last "
            f"write at {wline[0]}:{wline[1]}: both hold live values at once, so on hardware this read sees the "
            "other tensor's data. Place them apart, or finish with the first tensor before writing the second.")


def regions(t, placed: Placed) -> list[tuple[Placement, Box]]:
    """The physical tiles view `t` of a placed tensor touches, each with the addresses (partitions x bytes, in
    the buffer's address space) of its elements in that tile: per tile the bounding box of the elements the
    view holds there. A view that is not of the tensor's storage counts as the whole of every tile."""
    alloc = t.alloc
    base = alloc.data
    if base is None or base.ndim < 2 or not base.flags.c_contiguous or placed.row <= 0:
        return _whole(placed)
    origin = base.__array_interface__["data"][0]
    if t.adv is not None:
        parent, idx, _, grid = t.locate()
        data = parent.data
        if data is None or parent.alloc is not alloc or math.prod(grid) > _MAX_GATHER:
            return _whole(placed)
        offsets = np.full(grid, data.__array_interface__["data"][0] - origin, dtype=np.int64)
        for i, stride in zip(idx, data.strides):
            offsets += np.asarray(i, dtype=np.int64) * stride
        return _element_regions(placed, offsets.ravel(), data.itemsize, base.nbytes) or _whole(placed)
    data = t.data
    if data is None:
        return _whole(placed)
    start = data.__array_interface__["data"][0] - origin
    if start < 0 or start >= base.nbytes:
        return _whole(placed)
    tile, row = placed.tile, placed.row
    blk, rem = divmod(start, tile)
    part, byte = divmod(rem, row)
    blocks = np.array([blk], dtype=np.int64)
    p_lo = p_hi = b_lo = b_hi = 0
    for n, stride in zip(data.shape, data.strides):
        if n <= 1:
            continue
        if len(placed.tiles) > 1 and stride % tile == 0:
            blocks = (blocks[:, None] + np.arange(n, dtype=np.int64) * (stride // tile)).ravel()
            continue
        span = (n - 1) * stride
        if stride % row == 0:
            p_lo, p_hi = p_lo + min(0, span // row), p_hi + max(0, span // row)
        else:
            b_lo, b_hi = b_lo + min(0, span), b_hi + max(0, span)
    lo, hi = byte + b_lo, byte + b_hi + data.itemsize
    parts = tile // row
    if lo < 0 or hi > row or part + p_lo < 0 or part + p_hi >= parts or blocks.min() < 0 \
            or blocks.max() >= len(placed.tiles):
        # the view's elements wrap across partitions or tiles: place them element by element
        if data.size > _MAX_GATHER:
            return _whole(placed)
        offsets = np.full(data.shape, start, dtype=np.int64)
        for k, (n, stride) in enumerate(zip(data.shape, data.strides)):
            shape = [1] * data.ndim
            shape[k] = n
            offsets += (np.arange(n, dtype=np.int64) * stride).reshape(shape)
        return _element_regions(placed, offsets.ravel(), data.itemsize, base.nbytes) or _whole(placed)
    box = (part + p_lo, part + p_hi + 1, lo, hi)
    return [(placed.tiles[b], _physical(placed, placed.tiles[b], box)) for b in dict.fromkeys(blocks.tolist())]


def _whole(placed: Placed) -> list[tuple[Placement, Box]]:
    """Every tile of the tensor, whole (built only when needed: a block tensor has thousands of tiles)."""
    return [(p, p.box) for p in placed.tiles]


def _element_regions(placed: Placed, offsets: np.ndarray, itemsize: int, nbytes: int):
    """Per tile, the bounding box of the elements at byte `offsets` of the allocation's storage; None when an
    offset lies outside it."""
    if offsets.size == 0:
        return []
    if offsets.min() < 0 or offsets.max() + itemsize > nbytes:
        return None
    tile, row = placed.tile, placed.row
    blk, rem = np.divmod(offsets, tile)
    part, byte = np.divmod(rem, row)
    out = []
    for b in np.unique(blk).tolist():
        sel = blk == b
        box = (int(part[sel].min()), int(part[sel].max()) + 1, int(byte[sel].min()), int(byte[sel].max()) + itemsize)
        out.append((placed.tiles[b], _physical(placed, placed.tiles[b], box)))
    return out


def _physical(placed: Placed, p: Placement, box: Box) -> Box:
    """`box` (partitions and storage bytes within one logical tile) in the buffer's address space at tile `p`."""
    p0, _, b0, b1 = p.box
    scale = (b1 - b0) / placed.row  # hardware bytes per storage byte (1 but for packed dtypes)
    return (p0 + box[0], p0 + box[1], b0 + int(box[2] * scale), b0 + math.ceil(box[3] * scale))


def _overlap(a: Box | None, b: Box | None) -> Box | None:
    if a is None or b is None:
        return None
    p0, p1, b0, b1 = max(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), min(a[3], b[3])
    return (p0, p1, b0, b1) if p0 < p1 and b0 < b1 else None
