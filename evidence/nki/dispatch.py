"""The one dispatch point every shim call goes through: check, record a trace event, execute.

An op's *check* rule validates the call and returns a `Call` plan (operands, result shape,
dtype and buffer); the *cost* rule prices the plan; the *execute* rule does the numpy work. In
trace-only mode execute is skipped (results carry shapes and dtypes only), so the trace and the
report are the same as in a full run.

The op table is the run's (`State.ops`, given by `simulate`): this module sits below the op
modules, which build `Call` plans, and below `tensor`, whose operators dispatch here.
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from evidence.nki import dtypes, fp8_rounding, placement
from evidence.nki import state as _state
from evidence.nki.access_pattern import UnaddressableView
from evidence.nki.accumulation import COPY_OPS, is_addition
from evidence.documented_nki_api import NEWEST, documented
from evidence.nki.errors import SimulationError, UnsupportedOpError
from evidence.nki.indexing import full_mask
from evidence.nki.subscripts import GridStart
from evidence.nki.trace import TINY_FREE_ELEMENTS, free_per_partition

_BUF_SLOT = {"hbm": 0, "shared_hbm": 0, "private_hbm": 0, "sbuf": 1, "psum": 2}
_HBM = ("hbm", "shared_hbm", "private_hbm")


class Call:
    """The plan of one instruction, filled in by the op's check rule."""

    __slots__ = ("op", "engine", "ins", "out", "into", "result", "p", "mask", "flops", "dtype", "partitions",
                 "elements")

    def __init__(self, op: str, engine: str | None) -> None:
        self.op = op
        self.engine = engine  # None: bookkeeping only, no instruction is recorded
        self.ins: list = []  # (Tensor) operands read
        self.out = None  # Tensor written (fresh result or destination view)
        self.into = None  # nki 0.3+ dst-first calls: the destination the fresh result `out` is delivered to
        self.result = None  # what the shim returns to the kernel
        self.p: dict = {}  # op-specific parameters for execute/cost
        self.mask = None  # bool array of the op's mask=, or None
        self.flops = 0
        self.dtype = None
        self.partitions = 0
        self.elements = 0


def _argument_error(st, name: str, check, args: tuple, exc: TypeError) -> SimulationError:
    """A call whose arguments do not fit the API's signature (positional arguments to a keyword-only
    `nisa` instruction, a missing or unknown keyword), told as the kernel's error at its line with the
    signature the simulator implements, rather than as a crash inside the simulator."""
    params = list(inspect.signature(check).parameters.values())[1:]  # the first is the run state
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    shown = ", ".join(("*, " if p.kind is p.KEYWORD_ONLY and i == len(positional) else "") + p.name
                      + ("" if p.default is p.empty else "=...") for i, p in enumerate(params)
                      if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
    if len(args) > len(positional):
        why = (f"takes {len(positional)} positional argument(s) but {len(args)} were given"
               + (" (its arguments are keyword-only)" if not positional else ""))
    else:
        why = str(exc).split("() ", 1)[-1]
    return st.error("err_invalid_arguments", f"'{name}' {why}; it takes ({shown})")


def _undocumented(st, name: str) -> str | None:
    """Why an `nl.*` / `nisa.*` name the op table lacks is the kernel's defect, or None when it may be our gap:
    in the beta dialect (a frozen namespace) a name no documented release of either dialect has would fail to
    compile (AttributeError); a documented op we do not simulate, and any name in the still-growing standalone
    package, stays `unsupported_op` (evidence.documented_nki_api)."""
    space, _, attr = name.rpartition(".")
    if st.dialect != "beta" or space not in ("", "nisa") or documented(name):
        return None
    public = f"{space or 'nl'}.{attr}"
    return (f"'{public}' is in no documented NKI release ({NEWEST}): neuronx-cc fails to trace the kernel here "
            f"(AttributeError: module 'neuronxcc.nki.{'isa' if space else 'language'}' has no attribute '{attr}')")


def call(name: str, args: tuple, kwargs: dict, into=None):
    """Run op `name`. With `into` (a destination tile, the nki 0.3+ dst-first form), the op's fresh
    result is written there (`Tensor.receive`) and the call returns nothing."""
    st = _state.current()
    if st.sbuf_live > st.sbuf_peak:
        st.sample_peaks()
    op = st.ops.get(name)
    if op is None:
        file, line = st.where()
        undocumented = _undocumented(st, name)
        if undocumented:
            raise SimulationError("undocumented_api", undocumented, file, line)
        raise UnsupportedOpError(
            "unsupported_op",
            f"NKI API '{name}' is not in the simulator's op table; add an entry (check, execute, cost rules) "
            "to the OPS table of a module under evidence/nki/ops/",
            file,
            line,
        )
    for a in (*args, *kwargs.values(), into):
        if isinstance(a, UnaddressableView):  # an out-of-bounds `.ap()` view is an error where it is used
            raise a.error()
    redundant_before = st.redundant_bytes
    try:
        c = op.check(st, *args, **kwargs)
    except TypeError as exc:
        if exc.__traceback__.tb_next is None:  # the arguments did not bind: the kernel's call, not the simulator
            raise _argument_error(st, name, op.check, args, exc) from None
        raise
    if into is not None:
        into.check_destination(c)  # a tile method (tensor sits above this module)
        c.into, c.result = into, None
    written = c.into if c.into is not None else c.out
    if written is not None and written.alloc.param >= 0:
        st.params_written.add(written.alloc.param)  # an instruction writes an argument (host_access)
    if st.pstart_views:
        partition_start(st, c)
    p = c.p
    if p and "fp8_scaled" in p:
        fp8_rounding.judge(st, c, written)
    same = p.get("same") if p else False  # `t[idx] += x` assigning t[idx] to itself touches no data
    if c.engine is not None:
        _record(st, op, c, written, st.redundant_bytes - redundant_before)
        if st.placements:
            placement.access(st, c, written)
        st.recorder.chains.write(written, c.ins, is_addition(c.op, p), c.op in COPY_OPS)
        copied = c.op in COPY_OPS
        st.recorder.roundings.write(written, c.ins, copied, is_addition(c.op, p), c.op,
                                    copied and st.recorder.input_precision.computed(c.ins))
        st.recorder.input_precision.write(written, c.ins, c.op in COPY_OPS, c.engine == "tensor")
    elif c.out is not None:
        v = p.get("v") if p else None
        v = v if getattr(v, "alloc", None) is not None else None  # a tile (tensor sits above this module)
        if not same and c.op in COPY_OPS:  # binding a fresh result, PSUM accumulation
            st.recorder.chains.write(c.out, c.ins + [v] if v is not None else c.ins, False, True)
            st.recorder.roundings.write(c.out, c.ins + [v] if v is not None else c.ins, True)
            st.recorder.input_precision.write(c.out, c.ins + [v] if v is not None else c.ins, True)
        seq = st.instr_seq  # no instruction of its own: the tiles it binds are accessed where the last one ran
        for t in (c.out, *c.ins, v):
            if t is not None and t.alloc.live is not None:
                _touch(t.alloc.live, seq)
        if c.out.alloc.buffer == "psum":
            for t in (v, *c.ins):  # the bound value, or the addend of `acc += ...`
                if t is not None:
                    _written_in_place(t, seq)
        if st.placements and not same:
            placement.bind(st, c)
        if st.recorder.keep:
            _forward(st, c)
    if st.trace_only:
        if c.into is not None:
            c.into.receive(c.out, p.get("accumulate", False))  # write bookkeeping only
    elif op.execute is not None:
        st.read_origin = None  # undefined-data provenance of this instruction (tensor.Tensor.read)
        st.read_direct = False
        if not op.concurrent and not same and st.pipeline.busy:
            settle_for(st, c)
        op.execute(st, c)
        if c.into is not None and not p.get("delivered"):
            c.into.receive(c.out, p.get("accumulate", False))
    if written is not None and written.alloc.zeros and not p.get("zero_fill"):
        written.alloc.zeros = False  # see Alloc.zeros
    return c.result


def self_assignment(view) -> bool:
    """What `call("assign", (t, key, view))` does when `view` is `t[key]` itself (check_assign's "same":
    no instruction, no trace event, no data): sample the peaks, note an argument written, start the
    next instruction's provenance afresh. False when the run's op table has no "assign" row to bypass."""
    st = _state.current()
    if st.sbuf_live > st.sbuf_peak:
        st.sample_peaks()
    if "assign" not in st.ops:
        return False
    if view.alloc.param >= 0:
        st.params_written.add(view.alloc.param)
    if not st.trace_only:
        st.read_origin = None  # as call() does before an execute rule
        st.read_direct = False
    return True


def partition_start(st, c: Call) -> None:
    """The partition start rule binds compute engines (REFERENCE §1): report a view that breaks it when
    an engine instruction reads or writes it, or when it receives a fresh result an engine produced.
    DMA transfers (loads, stores, dma_copy) address any partition, so they never report it."""
    if c.engine is not None:
        if c.engine == "dma":
            return
        views = (*c.ins, c.out, c.into)
    elif c.op == "assign" and getattr(c.p.get("v"), "producer", None) not in (None, "dma"):
        views = (c.out,)  # binding a compute result: its instruction wrote the destination directly
    else:
        return
    # a mask may keep only a legal range of an index grid's partitions (GridStart): not judged under one
    masked = c.mask is not None or any(getattr(t, "valid", None) is not None for t in (*views, c.p.get("v")))
    for t in views:
        message = getattr(t, "pstart", None)
        if message and not (masked and isinstance(message, GridStart)):
            st.finding("partition_start_rule", message, "medium")


def settle_for(st, c: Call) -> None:
    """Wait for the pending TensorE jobs an instruction's tiles depend on (evidence.nki.pipeline):
    their writers for what it reads, writers and readers for what it writes or might write."""
    reads = {t.alloc for t in c.ins}
    writes = set()
    for x in (c.out, c.into, c.result, *c.p.values()):
        for t in (x if isinstance(x, (tuple, list)) else (x,)):
            if getattr(t, "alloc", None) is not None:  # a tile (tensor sits above this module)
                writes.add(t.alloc)
    for t in (c.out, c.result):
        if getattr(t, "alloc", None) is not None:
            reads.discard(t.alloc)
    st.pipeline.settle(reads=reads - writes, writes=writes)


_NAMES: dict = {}


def _dtype_name(dt) -> str:
    name = _NAMES.get(dt)
    if name is None:
        name = _NAMES[dt] = getattr(dt, "name", str(dt))
    return name


def _forward(st, c: Call) -> None:
    """A bookkeeping call that binds or accumulates other tiles into its destination (no instruction)."""
    srcs = list(c.ins)
    v = c.p.get("v")
    if getattr(v, "alloc", None) is not None and v not in srcs:  # a tile (tensor sits above this module)
        srcs.append(v)
    srcs = [t for t in srcs if t.alloc is not c.out.alloc or t.block != c.out.block]
    if srcs:
        rec = st.recorder
        rec.forwards.append((len(rec.events), (c.out.alloc.uid, c.out.block),
                             tuple((t.alloc.uid, t.block) for t in srcs)))


def _run_elements(t) -> int:
    """Contiguous elements of an HBM view along its innermost axes (one DMA buffer, REFERENCE §5.2).

    Basic views carry the load-tracking mask (inputs) or the write stamps (kernel-created tensors), real
    arrays shaped like the allocation and sliced like the data, so their strides say what is contiguous
    even in trace-only mode."""
    if t.adv is None:
        probe = t.lmask if t.lmask is not None else t.stamp
        if probe is None:
            return t.size
        run, expected = 1, probe.itemsize
        for n, stride in zip(reversed(probe.shape), reversed(probe.strides)):
            if n == 1:
                continue
            if stride != expected:
                break
            run *= n
            expected *= n
        return run
    parent, idx, grid = t.adv
    probe = parent.lmask if parent.lmask is not None else parent.stamp
    if probe is None or not grid:
        return 1
    # walk the innermost grid axis with more than one element: a trailing unit axis
    # (`mgrid[0:128, 0:F, 0:1]`) does not make every element its own buffer
    axis = max((i for i, n in enumerate(grid) if n > 1), default=len(grid) - 1)
    first = tuple(slice(None) if i == axis else 0 for i in range(len(grid)))
    offsets = 0
    for ix, stride in zip(idx, probe.strides):
        if isinstance(ix, np.ndarray):
            offsets = offsets + np.broadcast_to(ix, grid)[first] * (stride // probe.itemsize)
        else:
            offsets = offsets + int(ix) * (stride // probe.itemsize)
    offsets = np.atleast_1d(offsets)
    steps = np.diff(offsets) != 1
    return int(np.argmax(steps)) + 1 if steps.any() else int(offsets.size)


def _dma_run(c: Call, nbytes: int, parts: int) -> int:
    """Bytes per DMA buffer: the HBM side's contiguous run, at most the bytes per partition when the
    other side is on chip (each partition is a separate buffer there)."""
    hbm = None
    onchip = False
    for t in c.ins:
        if t.alloc.buffer in _HBM:
            hbm = t if hbm is None else hbm
        else:
            onchip = True
    out = c.into if c.into is not None else c.out
    if out is not None:
        if out.alloc.buffer in _HBM:
            hbm = out if hbm is None else hbm
        else:
            onchip = True
    per_partition = nbytes // max(parts, 1)
    if hbm is None:
        return max(1, per_partition)
    run = _run_elements(hbm) * hbm.itemsize
    return max(1, min(run, per_partition) if onchip else run)


def _record(st, op, c: Call, out, redundant: int = 0) -> None:
    """The trace event of instruction `c` writing `out` (its destination, or its fresh result)."""
    reads = [0, 0, 0]
    shapes = []
    st.instr_seq = seq = st.instr_seq + 1
    for t in c.ins:
        slot = _BUF_SLOT[t.alloc.buffer]
        reads[slot] += _nbytes(t)
        shapes.append(t.shape)
        if slot == 2:
            if t.alloc.live[2] == 0 and t.alloc.held:
                t.alloc.live[2] = t.alloc.held  # read again after binding: it was a tile of its own after all
            _touch(t.alloc.live, seq)
    writes = [0, 0, 0]
    if out is not None:
        size = math.prod(out.shape)
        slot = _BUF_SLOT[out.alloc.buffer]
        writes[slot] += size * dtypes.itemsize(out.dtype)
        if slot == 2:
            _touch(out.alloc.live, seq)
        shape = out.shape
        if c.out is not None and c.out.fresh:
            c.out.producer = c.engine  # who wrote it, for binding it to a destination (partition_start)
    else:
        shape = ()
    shapes.append(shape)
    elements = c.elements or (size if out is not None else (c.ins[0].size if c.ins else 0))
    parts = c.partitions or (shape[0] if shape else (c.ins[0].partitions if c.ins else 1))
    if c.mask is not None and shape:
        # Masked-out elements are neither computed nor moved (REFERENCE §3.2 "Masks": the compiler shrinks
        # the instruction): a ragged last tile moves and touches only the bytes its mask keeps (the traffic,
        # roofline and DMA-size facts read these). A masked DMA also counts the elements and partitions it
        # moves (bytes per partition decide "small transfer"); a compute instruction keeps its tile's, the
        # tiling the kernel chose: engine fill judges that choice, and a task of 16 rows masked from a
        # 128-row tile must not read as a kernel computing on 16 partitions
        kept = _mask_extent(c.mask, shape)
        if kept is not None:
            on, on_parts = kept
            frac = on / max(size, 1)
            reads = [int(round(r * frac)) for r in reads]
            writes = [int(round(w * frac)) for w in writes]
            if c.engine == "dma":
                if not c.elements:
                    elements = on
                if not c.partitions:
                    parts = on_parts
    c.elements, c.partitions = elements, parts
    file, line = st.where()
    if free_per_partition(c.engine, shape, elements, parts) <= TINY_FREE_ELEMENTS:
        agg = st.recorder.agg
        agg.tiny_any += 1
        if walks_free_axis(c, out) and (c.op not in MATMUL_OPS or _same_stationary(st, c, (file, line))):
            agg.tiny_walks += 1
    dt = c.dtype if c.dtype is not None else (out.dtype if out is not None else None)
    cycles = op.cost(st, c) if op.cost is not None else 0.0
    rec = st.recorder
    dtname = "" if dt is None else _dtype_name(dt)
    reads, writes = (reads[0], reads[1], reads[2]), (writes[0], writes[1], writes[2])
    if not rec.keep:  # no event to build (Recorder.record): only the aggregate counts it
        rec.agg.count(c.op, c.engine, file, line, tuple(shapes), dtname, parts, elements, reads, writes,
                      float(cycles), c.flops, redundant)
        return
    rd = tuple((t.alloc.uid, t.block) for t in c.ins)
    wr = (out.alloc.uid, out.block) if out is not None else None
    run = _dma_run(c, max(sum(reads), sum(writes)), parts) if c.engine == "dma" else 0
    rec.record(c.op, c.engine, line, tuple(shapes), dtname, parts, elements, reads, writes, float(cycles), c.flops,
               rd, wr, run, redundant, file)


MATMUL_OPS = ("matmul", "nisa.nc_matmul")


def _same_stationary(st, c: Call, site: tuple) -> bool:
    """Whether this line's previous tiny matmul multiplied the same stationary region. Only then is a narrow
    matmul a walk (the kernel streams a few columns at a time through the same weights, where one wider moving
    operand would do); a stationary that changes from one matmul to the next (a head or K-chunk of an
    accumulation group, another weight block of a decode projection) makes each a different product however
    narrow its tokens are."""
    s = c.ins[0]
    key = (s.alloc.uid, s.block, s.shape, s.data.__array_interface__["data"][0] if s.data is not None else s.box)
    same = st.matmul_stationary.get(site) == key
    st.matmul_stationary[site] = key
    return same


def walks_free_axis(c: Call, out) -> bool:
    """Whether a tiny instruction takes a small piece of a tensor that is wider along its free axes: the
    kernel walks that tensor a few elements at a time (`x[:, j:j + 1]` of a [128, 2048] tile, a column of
    an HBM matrix), per-element work by choice. A view as wide as its tensor's narrowest free axis is what
    the data gives (the 4 tokens of a decode step): no walk. HBM tensors have no partition axis: their
    longest axis is taken as the one on the partitions and any other may be the free one (a transposing
    load puts a [4, H] activation's tokens there); a vector ([N] or [N, 1]) folds onto the partitions, so
    N / 128 elements per partition is what it allows (a [128, 1] piece of a long vector is a walk)."""
    for t in (*c.ins, out):
        if t is None:
            continue
        a = t.alloc
        if a.buffer in _HBM:
            axes = sorted(n for n in a.shape if n > 1)
            narrowest = axes[0] if len(axes) > 1 else (axes[0] // 128 if axes else 1)
        else:
            narrowest = min((n for n in a.shape[a.pdim + 1:] if n > 1), default=1)
        if math.prod(t.shape[1:]) < narrowest:
            return True
    return False


def _mask_extent(mask: np.ndarray, shape: tuple) -> tuple[int, int] | None:
    """(elements, partitions) a mask keeps of a tile of `shape`; None if the mask does not align with it."""
    try:
        m = full_mask(mask, shape)
    except (ValueError, SimulationError):  # a mask the op aligned otherwise (its own operand shape): the whole tile
        return None
    if m.ndim == 0:
        return None
    on = int(np.count_nonzero(m))
    rows = m.reshape(m.shape[0], -1).any(axis=1) if m.shape[0] else m.reshape(0)
    return on, int(np.count_nonzero(rows))


def _written_in_place(v, seq: int) -> None:
    """An instruction's fresh PSUM result bound to a PSUM destination (`acc[...] = nc_matmul(...)`, `acc += ...`)
    the instruction wrote straight into the destination: the result needs no bank of its own (it made a kernel
    that pins all 8 banks by direct allocation read 9 and a false psum_capacity_exceeded). An instruction that
    reads the result again later gives the bank back (`_record`)."""
    live = v.alloc.live
    if live is not None and v.producer not in (None, "dma") and live[0] == live[1] == seq and live[2] > 0:
        live[2] = 0


def _touch(live: list[int], seq: int) -> None:
    """Extend a PSUM allocation's live range (`State.psum_range`) to instruction `seq`."""
    if live[0] < 0:
        live[0] = seq
    live[1] = seq


def _nbytes(t) -> int:
    return math.prod(t.shape) * dtypes.itemsize(t.dtype)
