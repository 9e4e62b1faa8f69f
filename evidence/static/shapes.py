"""Symbolic values for NKI source: constant propagation good enough for real kernels.

The evaluator never runs kernel code. It folds integers (module constants, `nl.tile_size.*`,
`a.shape[i]` of inputs, arithmetic, `math.ceil`, `min`/`max`), tracks tensors as `Tensor`
(shape, dtype, buffer, origin) through allocations, loads, slicing and NKI calls, and records
which loop variables and names every expression depends on (the basis of the loop rules).
Anything it cannot fold is `None` ("unknown"); rules treat unknown as "do not judge".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import libcst as cst

# nl.tile_size constants (REFERENCE §2; values from the KLR tracer).
TILE_SIZE = {
    "pmax": 128, "psum_fmax": 512, "gemm_stationary_fmax": 128, "gemm_moving_fmax": 512,
    "bn_stats_fmax": 512, "psum_bank_fmax": 512, "psum_bank_fmax_bytes": 2048, "psum_num_banks": 8,
    "total_available_sbuf_size": 212984, "sbuf_min_align": 1, "psum_min_align": 4,
}
ITEMSIZE = {
    "float32": 4, "tfloat32": 4, "float32r": 4, "int32": 4, "uint32": 4, "bfloat16": 2,
    "float16": 2, "int16": 2, "uint16": 2, "float8_e4m3": 1, "float8_e5m2": 1, "float8_e4m3fn": 1,
    "int8": 1, "uint8": 1, "bool_": 1, "bool": 1, "float64": 8, "int64": 8,
}
LOW_PRECISION = frozenset({"bfloat16", "float16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn"})
_DTYPE_ALIASES = {"bool": "bool_", "half": "float16", "single": "float32", "float": "float32", "double": "float64"}

# Short canonical module names: `neuronxcc.nki.language` and `nki.language` both become `nl`.
_MODULE_SHORT = {
    "nki.language": "nl", "nki.isa": "nisa", "nki.typing": "nt", "nki.compiler": "ncc",
    "numpy": "np", "nki": "nki", "math": "math",
}

ALLOC_CALLS = frozenset({
    "nl.ndarray", "nl.zeros", "nl.ones", "nl.full", "nl.empty_like", "nl.zeros_like",
    "nl.ones_like", "nl.full_like", "nl.rand",
})
REDUCE_CALLS = frozenset({"nl.sum", "nl.max", "nl.min", "nl.mean", "nl.prod", "nl.var", "nl.all", "nisa.tensor_reduce"})
MATMUL_CALLS = frozenset({"nl.matmul", "nisa.nc_matmul"})
LOAD_CALLS = frozenset({"nl.load", "nl.load_transpose2d"})


def canonical_module(dotted: str) -> str:
    if dotted.startswith("neuronxcc."):
        dotted = dotted[len("neuronxcc."):]
    if dotted in _MODULE_SHORT:
        return _MODULE_SHORT[dotted]
    for long, short in _MODULE_SHORT.items():
        if dotted.startswith(long + ".") and long != "nki":
            return short + dotted[len(long):]
    return dotted


class ParDim(int):
    """An extent marked with `nl.par_dim(n)`: the partition axis of an allocation."""


@dataclass(frozen=True, slots=True)
class Dtype:
    name: str

    @property
    def itemsize(self) -> int | None:
        return ITEMSIZE.get(self.name)


@dataclass(frozen=True, slots=True)
class Index:
    """An arange/mgrid index expression (or a slice extent) covering `size` positions. `grid` and `axis` say
    which grid axis it runs along (`nl.mgrid[...]` call, or the arange family `a[:, None]`/`a[None, :]`);
    0 and -1 when unknown."""

    size: int | None
    grid: int = 0
    axis: int = -1


ARANGE_GRID = -1  # aranges placed on an axis by `[:, None]` / `[None, :]` broadcast with each other


@dataclass(frozen=True, slots=True)
class MultiIndex:
    """An index expression over several axes of one grid (`i_t * 128 + i_m` from `nl.mgrid[0:2, 0:128]`):
    it selects one result axis per grid axis, in axis order."""

    grid: int
    axes: tuple[tuple[int, int | None], ...]  # (axis, size), sorted by axis

    @property
    def sizes(self) -> list[int | None]:
        return [size for _, size in self.axes]


def combine_indices(a: Index | MultiIndex, b: Index | MultiIndex) -> Index | MultiIndex:
    """`a op b` for two index expressions: one grid's axes broadcast into a MultiIndex; anything the
    analyzer cannot place (an arange of unknown axis, two different grids) has an unknown extent."""
    if a.grid == 0 or b.grid == 0 or a.grid != b.grid:
        return Index(None)
    axes = dict(a.axes if isinstance(a, MultiIndex) else ((a.axis, a.size),))
    for axis, size in (b.axes if isinstance(b, MultiIndex) else ((b.axis, b.size),)):
        if axes.get(axis, size) != size:
            return Index(None)
        axes[axis] = size
    if len(axes) == 1:
        (axis, size), = axes.items()
        return Index(size, a.grid, axis)
    return MultiIndex(a.grid, tuple(sorted(axes.items())))


class Sym:
    """An integer scalar whose value is unknown (loop index arithmetic, program_id, ...)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Sym"


SYM = Sym()


class Grid(tuple):
    """`nl.mgrid[...]`: a tuple of Index with the `.p`, `.x`, `.y`, `.z` accessors."""

    AXES = {"p": 0, "x": 1, "y": 2, "z": 3}


@dataclass(frozen=True, slots=True)
class LoopVar:
    loop_id: int
    trip: int | None


@dataclass(frozen=True, slots=True)
class Tensor:
    """What the analyzer knows about a tensor or tile. `pdim` is the partition axis (par_dim)."""

    shape: tuple[int | None, ...] | None
    dtype: str | None
    buffer: str | None  # hbm | shared_hbm | private_hbm | sbuf | psum | None
    origin: str  # input | alloc | load | matmul | compute | view
    name: str | None = None
    pdim: int = 0
    mutable: bool = False

    @property
    def partitions(self) -> int | None:
        if not self.shape or len(self.shape) <= self.pdim:
            return None
        return self.shape[self.pdim]

    @property
    def free_elems(self) -> int | None:
        if self.shape is None:
            return None
        rest = self.shape[self.pdim + 1:]
        if any(d is None for d in rest):
            return None
        return math.prod(rest) if rest else 1  # type: ignore[arg-type]

    @property
    def itemsize(self) -> int | None:
        return ITEMSIZE.get(self.dtype) if self.dtype else None

    @property
    def free_bytes(self) -> int | None:
        f, s = self.free_elems, self.itemsize
        return f * s if f is not None and s is not None else None

    @property
    def total_bytes(self) -> int | None:
        fb, p = self.free_bytes, self.partitions
        return fb * p if fb is not None and p is not None else None


def promote(a: str | None, b: str | None) -> str | None:
    """NKI promotion of two tensor dtypes (REFERENCE §3.8); None when unknown."""
    if a is None or b is None:
        return a or b
    if a == b:
        return a
    pair = {a, b}
    if pair == {"float16", "bfloat16"} or pair == {"int32", "uint32"}:
        return "float32"
    if pair == {"float8_e4m3", "float8_e5m2"}:
        return "bfloat16"
    fa, fb = a.startswith(("float", "bfloat", "tfloat")), b.startswith(("float", "bfloat", "tfloat"))
    if fa != fb:
        return a if fa else b
    return a if (ITEMSIZE.get(a, 0) >= ITEMSIZE.get(b, 0)) else b


def promote_scalar(dtype: str | None, scalar: object) -> str | None:
    """Python scalars are weakly typed as fp32 / int32 (REFERENCE §3.8)."""
    if dtype is None:
        return None
    if isinstance(scalar, bool):
        return dtype
    if isinstance(scalar, float):
        return dtype if dtype in ("float32", "float64") else "float32"
    if isinstance(scalar, int):
        is_float = dtype.startswith(("float", "bfloat", "tfloat"))
        return dtype if is_float or ITEMSIZE.get(dtype, 4) >= 4 else "int32"
    return dtype


def broadcast(a: tuple | None, b: tuple | None) -> tuple | None:
    """Shape of an element-wise op; [P] aligns with the leading axis as NKI does (REFERENCE §3.6)."""
    if a is None or b is None:
        return a or b
    if len(a) < len(b):
        a, b = b, a
    b = tuple(b) + (1,) * (len(a) - len(b))
    out = []
    for x, y in zip(a, b):
        out.append(x if y == 1 else y if x == 1 else (x if x is not None else y))
    return tuple(out)


def as_shape(value: object) -> tuple[int | None, ...] | None:
    if isinstance(value, tuple):
        return tuple(v if isinstance(v, int) and not isinstance(v, bool) else None for v in value)
    if isinstance(value, list):
        return as_shape(tuple(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,)
    return None


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as text, or None for anything that is not a plain dotted name."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def const_int(node: cst.BaseExpression | None) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.evaluated_value)
    return None


@dataclass(frozen=True, slots=True)
class Binding:
    """A name in scope: its value, the loops and names it depends on, where it was bound."""

    value: object
    deps: frozenset[int] = frozenset()
    names: frozenset[str] = frozenset()
    def_loops: tuple[int, ...] = ()
    node: cst.CSTNode | None = None  # the right-hand side that produced it


def with_shape(t: Tensor, shape: tuple | None, **kw: object) -> Tensor:
    return replace(t, shape=shape, **kw)
