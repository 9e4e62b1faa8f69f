"""The one dispatch point every shim call goes through: check, record a trace event, execute.

An op's *check* rule validates the call and returns a `Call` plan (operands, result shape,
dtype and buffer); the *cost* rule prices the plan; the *execute* rule does the numpy work. In
trace-only mode execute is skipped (results carry shapes and dtypes only), so the trace and the
report are the same as in a full run.

The op table is the run's (`State.ops`, given by `simulate`): this module sits below the op
modules, which build `Call` plans, and below `tensor`, whose operators dispatch here.
"""

from __future__ import annotations

from evidence.nki import state as _state
from evidence.nki.errors import UnsupportedOpError
from evidence.nki.trace import TraceEvent

_BUF_SLOT = {"hbm": 0, "shared_hbm": 0, "private_hbm": 0, "sbuf": 1, "psum": 2}


class Call:
    """The plan of one instruction, filled in by the op's check rule."""

    __slots__ = ("op", "engine", "ins", "out", "result", "p", "mask", "flops", "dtype", "partitions", "elements")

    def __init__(self, op: str, engine: str | None) -> None:
        self.op = op
        self.engine = engine  # None: bookkeeping only, no instruction is recorded
        self.ins: list = []  # (Tensor) operands read
        self.out = None  # Tensor written (fresh result or destination view)
        self.result = None  # what the shim returns to the kernel
        self.p: dict = {}  # op-specific parameters for execute/cost
        self.mask = None  # bool array of the op's mask=, or None
        self.flops = 0
        self.dtype = None
        self.partitions = 0
        self.elements = 0


def call(name: str, args: tuple, kwargs: dict):
    st = _state.current()
    if st.sbuf_live > st.sbuf_peak or st.psum_live > st.psum_peak:
        st.sample_peaks()
    op = st.ops.get(name)
    if op is None:
        file, line = st.where()
        raise UnsupportedOpError(
            "unsupported_op",
            f"NKI API '{name}' is not in the simulator's op table; add an entry (check, execute, cost rules) "
            "to the OPS table of a module under evidence/nki/ops/",
            file,
            line,
        )
    c = op.check(st, *args, **kwargs)
    if c.engine is not None:
        _record(st, op, c)
    if op.execute is not None and not st.trace_only:
        st.read_origin = None  # undefined-data provenance of this instruction (tensor.Tensor.read)
        st.read_direct = False
        op.execute(st, c)
    return c.result


_NAMES: dict = {}


def _dtype_name(dt) -> str:
    name = _NAMES.get(dt)
    if name is None:
        name = _NAMES[dt] = getattr(dt, "name", str(dt))
    return name


def _record(st, op, c: Call) -> None:
    reads = [0, 0, 0]
    writes = [0, 0, 0]
    for t in c.ins:
        reads[_BUF_SLOT[t.alloc.buffer]] += t.size * t.itemsize
    out = c.out
    if out is not None:
        writes[_BUF_SLOT[out.alloc.buffer]] += out.size * out.itemsize
        shape = out.shape
    else:
        shape = ()
    elements = c.elements or (out.size if out is not None else (c.ins[0].size if c.ins else 0))
    parts = c.partitions or (shape[0] if shape else (c.ins[0].partitions if c.ins else 1))
    c.elements, c.partitions = elements, parts
    dt = c.dtype if c.dtype is not None else (out.dtype if out is not None else None)
    cycles = op.cost(st, c) if op.cost is not None else 0.0
    file, line = st.where()
    st.recorder.add(
        TraceEvent(
            c.op, c.engine, line, tuple(t.shape for t in c.ins) + (shape,),
            "" if dt is None else _dtype_name(dt), parts, elements,
            (reads[0], reads[1], reads[2]), (writes[0], writes[1], writes[2]), float(cycles), c.flops,
        )
    )

