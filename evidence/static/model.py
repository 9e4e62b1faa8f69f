"""What the single traversal learns about a kernel file: functions, loops, calls, assignments.

Rules read these objects (handed to their hooks) instead of re-walking the tree; the facts
collector turns the same objects into `nki.kernel` / `nki.loop` / `nki.alloc` evidence.
Plain mutable dataclasses: they live only for one analysis, in the hot path.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from evidence.static.shapes import Tensor

LOOP_KINDS = ("affine_range", "sequential_range", "static_range", "range")


@dataclass(eq=False)
class InputBinding:
    """A kernel argument as the submission declares it (from `InputSpec`)."""

    name: str
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    value: int | float | bool | tuple[int | float | bool, ...] | None = None


@dataclass(eq=False)
class FunctionInfo:
    name: str
    node: cst.FunctionDef
    is_kernel: bool
    decorator: str
    start: int
    end: int
    params: tuple[str, ...] = ()
    mutable_params: frozenset[str] = frozenset()
    loops: list[LoopInfo] = field(default_factory=list)
    calls: list[CallInfo] = field(default_factory=list)
    assigns: list[AssignInfo] = field(default_factory=list)
    returns_value: bool = False
    uses_mask: bool = False


@dataclass(eq=False)
class LoopInfo:
    id: int
    kind: str  # affine_range | sequential_range | static_range | range | other
    trip: int | None
    vars: tuple[str, ...]
    depth: int  # 1 = outermost loop of its function
    start: int
    end: int
    node: cst.For
    function: FunctionInfo | None
    parent: LoopInfo | None
    trip_expr: cst.BaseExpression | None = None
    calls: list[CallInfo] = field(default_factory=list)
    assigns: list[AssignInfo] = field(default_factory=list)


@dataclass(eq=False)
class CallInfo:
    node: cst.Call
    name: str  # canonical: nl.load, nisa.nc_matmul, ...
    value: object
    start: int
    end: int
    loops: tuple[LoopInfo, ...]
    function: FunctionInfo | None
    deps: frozenset[int]
    names: frozenset[str]
    nested: int  # enclosing for/if/while/with blocks inside the function
    # Kept for the facts of matmuls and reductions (evaluated while their scope was live):
    # the tensors a call reads or writes by keyword or position ("0", "1", ...), and a matmul's
    # (stationary, moving).
    operands: dict[str, object] = field(default_factory=dict)
    matmul: tuple[object, object] | None = None

    @property
    def loop(self) -> LoopInfo | None:
        return self.loops[-1] if self.loops else None

    def arg(self, index: int | None, keyword: str | None = None) -> cst.BaseExpression | None:
        """The argument node at `index` (positional) or passed as `keyword`."""
        positional = 0
        for a in self.node.args:
            if a.keyword is not None:
                if keyword is not None and a.keyword.value == keyword:
                    return a.value
            elif not a.star:
                if index is not None and positional == index:
                    return a.value
                positional += 1
        return None

    def has_kw(self, keyword: str) -> bool:
        return any(a.keyword is not None and a.keyword.value == keyword for a in self.node.args)

    @property
    def tensor(self) -> Tensor | None:
        return self.value if isinstance(self.value, Tensor) else None


@dataclass(eq=False)
class AssignInfo:
    node: cst.CSTNode
    kind: str  # bind (x = ...) | store (x[...] = ...) | aug (x += ... / x[...] += ...)
    target: str | None  # root name of the target
    value_node: cst.BaseExpression
    value: object
    deps: frozenset[int]  # loops the value depends on
    names: frozenset[str]  # names the value reads
    index_deps: frozenset[int]  # loops the target subscript depends on (store/aug into a subscript)
    subscripted: bool
    op: str | None
    start: int
    end: int
    loops: tuple[LoopInfo, ...]
    function: FunctionInfo | None
    target_value: object  # what the target held before this assignment
    target_def_loops: tuple[int, ...] | None  # loops enclosing the target's definition (None: unbound)
