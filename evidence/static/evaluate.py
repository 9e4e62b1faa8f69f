"""Expression evaluator over `shapes` values, memoised per node, with dependency tracking.

`Evaluator.ev(node)` returns a folded value (int, float, tuple, Tensor, Index, LoopVar, Dtype,
a canonical API name as `str` for module references) or None. As a side effect it accumulates
the loop ids and names the expression reads, so `Evaluator.deps_of(node)` is free afterwards.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

import libcst as cst

from evidence.static.conditions import decide
from evidence.static.positions import children
from evidence.static.helper_classes import Instance
from evidence.static.records import Record, RecordClass
from evidence.static.shapes import (
    _DTYPE_ALIASES, ALLOC_CALLS, ARANGE_GRID, ITEMSIZE, LOAD_CALLS, REDUCE_CALLS, SYM, TILE_SIZE, Binding, Dtype, Grid,
    Index, LoopVar, MultiIndex, ParDim, Sym, Tensor, as_shape, broadcast, canonical_module, combine_indices, promote,
    promote_scalar,
)

_BINOPS: dict[type, Callable] = {
    cst.Add: operator.add, cst.Subtract: operator.sub, cst.Multiply: operator.mul,
    cst.FloorDivide: operator.floordiv, cst.Divide: operator.truediv, cst.Modulo: operator.mod,
    cst.Power: operator.pow, cst.LeftShift: operator.lshift, cst.RightShift: operator.rshift,
}
_FOLD_CALLS: dict[str, Callable] = {
    "math.ceil": math.ceil, "math.floor": math.floor, "math.prod": lambda *a: math.prod(a[0]) if len(a) == 1 else None,
    "min": min, "max": max, "int": int, "abs": abs, "len": len, "np.prod": lambda x: math.prod(x),
    "math.log2": math.log2, "math.sqrt": math.sqrt, "float": float, "round": round,
}
_PASSTHROUGH_PREFIX = ("nl.", "nisa.")
WARM_STEP = 50  # levels of a too-deep expression between memoised subexpressions (`Evaluator._deep`)


class Evaluator:
    def __init__(self, lookup: Callable[[str], Binding | None], standalone: bool = False) -> None:
        self.lookup = lookup
        # Standalone nki: nisa calls write into a dst argument and return nothing.
        self.standalone = standalone
        # the submission's dataclasses by the name this file calls them (`evidence.static.records`)
        self.records: dict[str, RecordClass] = {}
        # the submission's classes by the name this file uses: a constructor call makes an `Instance`
        self.classes: dict[str, tuple[str, str]] = {}
        self.memo: dict[int, tuple[object, frozenset[int], frozenset[str]]] = {}
        self._deps: set[int] = set()
        self._names: set[str] = set()
        self._evaluating = False  # inside an `ev` call (nested calls recurse plainly)

    # -- public ---------------------------------------------------------------------------
    def ev(self, node: cst.CSTNode | None) -> object:
        if node is None:
            return None
        hit = self.memo.get(id(node))
        if hit is not None:
            self._deps |= hit[1]
            self._names |= hit[2]
            return hit[0]
        if self._evaluating:
            return self._fresh(node)
        self._evaluating = True  # the outermost call: the one that can afford to catch a too-deep expression
        outer = self._deps, self._names
        try:
            return self._fresh(node)
        except RecursionError:
            self._deps, self._names = outer
            return self._deep(node)
        finally:
            self._evaluating = False

    def _deep(self, node: cst.CSTNode) -> object:
        """An expression nested deeper than the interpreter's stack (generated code: `a + a + ... + a` a thousand
        terms long): its subexpressions evaluated bottom-up first, every WARM_STEP levels, so each evaluation
        finds the one below it memoised and recurses at most WARM_STEP levels. The values are those plain
        recursion would give; an expression still too deep is unknown (None)."""
        heights: dict[int, int] = {}
        levels: list[tuple[int, cst.CSTNode]] = []
        stack: list[tuple[cst.CSTNode, bool]] = [(node, False)]
        while stack:
            n, done = stack.pop()
            if not done:
                stack.append((n, True))
                stack.extend((c, False) for c in children(n))
                continue
            h = 1 + max((heights[id(c)] for c in children(n)), default=0)
            heights[id(n)] = h
            if h % WARM_STEP == 0 and isinstance(n, cst.BaseExpression):
                levels.append((h, n))
        levels.sort(key=lambda x: x[0])
        outer = self._deps, self._names
        try:
            for _, n in levels:
                self.ev(n)
            self._deps, self._names = outer
            return self._fresh(node)
        except RecursionError:
            self._deps, self._names = outer
            self.memo[id(node)] = (None, frozenset(), frozenset())
            return None

    def _fresh(self, node: cst.CSTNode) -> object:
        """`ev` of a node not memoised yet."""
        outer_deps, outer_names = self._deps, self._names
        self._deps, self._names = set(), set()
        try:
            value = self._ev(node)
        except (ArithmeticError, ValueError, TypeError, OverflowError):
            value = None
        deps, names = frozenset(self._deps), frozenset(self._names)
        self.memo[id(node)] = (value, deps, names)
        outer_deps |= deps
        outer_names |= names
        self._deps, self._names = outer_deps, outer_names
        return value

    def deps_of(self, node: cst.CSTNode | None) -> tuple[frozenset[int], frozenset[str]]:
        if node is None:
            return frozenset(), frozenset()
        self.ev(node)
        _, deps, names = self.memo[id(node)]
        return deps, names

    def forget(self, node: cst.CSTNode) -> None:
        self.memo.pop(id(node), None)

    def api_name(self, func: cst.BaseExpression) -> str | None:
        """Canonical dotted name of a callee (`nl.load`, `nisa.nc_matmul`, `math.ceil`, `min`)."""
        if isinstance(func, cst.Name):
            b = self.lookup(func.value)
            if b is not None and isinstance(b.value, str):
                return b.value
            return func.value if b is None else None
        attrs = []  # `a.b.c`: down the chain without recursion (generated code chains thousands deep)
        while isinstance(func, cst.Attribute):
            attrs.append(func.attr.value)
            func = func.value
        if not attrs or not isinstance(func, cst.Name):
            return None
        base = self.api_name(func)
        return ".".join([base, *reversed(attrs)]) if base else None

    # -- dispatch -------------------------------------------------------------------------
    def _ev(self, node: cst.CSTNode) -> object:
        t = type(node)
        if t is cst.Integer:
            return int(node.evaluated_value)  # type: ignore[attr-defined]
        if t is cst.Float:
            return float(node.evaluated_value)  # type: ignore[attr-defined]
        if t is cst.Name:
            return self._name(node.value)  # type: ignore[attr-defined]
        if t is cst.Attribute:
            return self._attribute(node)  # type: ignore[arg-type]
        if t is cst.BinaryOperation:
            return self._binop(node)  # type: ignore[arg-type]
        if t is cst.Call:
            return self._call(node)  # type: ignore[arg-type]
        if t is cst.Subscript:
            return self._subscript(node)  # type: ignore[arg-type]
        if t in (cst.Tuple, cst.List):
            return tuple(self.ev(e.value) for e in node.elements)  # type: ignore[attr-defined]
        if t is cst.UnaryOperation:
            v = self.ev(node.expression)  # type: ignore[attr-defined]
            if isinstance(node.operator, cst.Minus) and isinstance(v, (int, float)):  # type: ignore[attr-defined]
                return -v
            return v if isinstance(v, Tensor) else None
        if t is cst.SimpleString:
            return None
        if t is cst.IfExp:
            return self._if_exp(node)  # type: ignore[arg-type]
        for child in node.children:  # unknown construct: still record what it reads
            if isinstance(child, cst.BaseExpression) or isinstance(child, (cst.Arg, cst.Element, cst.ComparisonTarget)):
                self.ev(child.value if isinstance(child, (cst.Arg, cst.Element)) else child)
        return None

    def _name(self, name: str) -> object:
        if name in ("True", "False"):
            return name == "True"
        b = self.lookup(name)
        if b is None:
            return name if name in ("range", "min", "max", "int", "len", "abs", "float", "round") else None
        self._deps |= b.deps
        self._names.add(name)
        return b.value

    def _attribute(self, node: cst.Attribute) -> object:
        attr = node.attr.value
        base = self.ev(node.value)
        if isinstance(base, str):  # a module or API path
            full = f"{base}.{attr}"
            if base == "nl.tile_size" and attr in TILE_SIZE:
                return TILE_SIZE[attr]
            if base in ("nl", "np") and (attr in ITEMSIZE or attr in _DTYPE_ALIASES):
                return Dtype(_DTYPE_ALIASES.get(attr, attr))
            return full
        if isinstance(base, Tensor):
            if attr == "shape":
                return base.shape
            if attr == "dtype":
                return Dtype(base.dtype) if base.dtype else None
            if attr == "T":
                return Tensor(tuple(reversed(base.shape)) if base.shape else None, base.dtype, base.buffer, "view", base.name)
            return None
        if isinstance(base, Record):
            return base.get(attr)
        if isinstance(base, Grid) and attr in Grid.AXES and Grid.AXES[attr] < len(base):
            return base[Grid.AXES[attr]]
        return None

    def _binop(self, node: cst.BinaryOperation) -> object:
        left, right = self.ev(node.left), self.ev(node.right)
        fn = _BINOPS.get(type(node.operator))
        num = (int, float)
        if isinstance(left, num) and isinstance(right, num) and fn is not None:
            if isinstance(left, bool) or isinstance(right, bool):
                return None
            return fn(left, right)
        if isinstance(left, Tensor) or isinstance(right, Tensor):
            if isinstance(left, Tensor) and isinstance(right, Tensor):
                shape, dtype = broadcast(left.shape, right.shape), promote(left.dtype, right.dtype)
            else:
                t, other = (left, right) if isinstance(left, Tensor) else (right, left)
                shape = t.shape
                dtype = promote_scalar(t.dtype, other) if isinstance(other, num) else t.dtype
            buf = next((x.buffer for x in (left, right) if isinstance(x, Tensor) and x.buffer != "psum"), "sbuf")
            return Tensor(shape, dtype, buf or "sbuf", "compute")
        idx = (Index, MultiIndex)
        if isinstance(left, idx) and isinstance(right, idx):
            return combine_indices(left, right)
        for x in (left, right):
            if isinstance(x, idx):
                return x
        scalar = (int, float, Sym, LoopVar)
        if isinstance(left, scalar) and isinstance(right, scalar):
            return SYM
        return None

    def _if_exp(self, node: cst.IfExp) -> object:
        """`a if cond else b`: the branch a known condition picks (`np.float32 if mixed_precision
        else q.dtype` with the default True). Undecided, the value is unknown unless both agree:
        taking either side would invent a dtype or size the kernel may not have."""
        taken = decide(node.test, self.ev)
        if taken is not None:
            return self.ev(node.body if taken else node.orelse)
        body, orelse = self.ev(node.body), self.ev(node.orelse)
        return body if body is not None and type(body) is type(orelse) and body == orelse else None

    def _subscript(self, node: cst.Subscript) -> object:
        base = self.ev(node.value)
        elems = node.slice
        if isinstance(base, tuple):
            if len(elems) == 1 and isinstance(elems[0].slice, cst.Index):
                i = self.ev(elems[0].slice.value)
                if isinstance(i, int) and -len(base) <= i < len(base):
                    return base[i]
            return None
        if isinstance(base, Index):
            return _placed_arange(base, elems)
        if base == "nl.mgrid":
            sizes = []
            for axis, e in enumerate(elems):
                s = e.slice
                if isinstance(s, cst.Slice):
                    lo = self.ev(s.lower) if s.lower else 0
                    hi = self.ev(s.upper)
                    sizes.append(Index(hi - lo if isinstance(hi, int) and isinstance(lo, int) else None, id(node), axis))
                else:
                    sizes.append(Index(None))
            return Grid(sizes)
        if isinstance(base, Tensor):
            return self._slice_tensor(base, elems)
        for e in elems:  # record reads in index expressions of unknown bases
            s = e.slice
            if isinstance(s, cst.Index):
                self.ev(s.value)
        return None

    def _slice_tensor(self, t: Tensor, elems: tuple) -> Tensor:
        """Shape of `t[...]`: slices keep their extent, integer positions drop their axis
        (numpy rules; a result under rank 2 is padded with leading 1s, as a tile row)."""
        dims: list[int | None] = []
        src = list(t.shape) if t.shape is not None else None
        pos = 0
        pdim = t.pdim
        dropped = 0
        gone: list[int] = []  # where dropped (non-block) axes were, to restore a tile's rank
        on_partitions: set[int] = set()  # dims taken by a partition-placed index (`nl.arange(n)[:, None]`, mgrid axis 0)
        for n_el, e in enumerate(elems):
            s = e.slice
            full = src[pos] if src is not None and pos < len(src) else None
            if isinstance(s, cst.Slice):
                lo = self.ev(s.lower) if s.lower is not None else 0
                hi = self.ev(s.upper) if s.upper is not None else full
                step = self.ev(s.step) if s.step is not None else 1
                if isinstance(lo, Index) or isinstance(hi, Index):
                    dims.append(None)
                elif isinstance(lo, int) and isinstance(hi, int) and isinstance(step, int) and step > 0:
                    dims.append(max(0, -(-(hi - lo) // step)))
                elif s.lower is not None and s.upper is not None and step == 1:
                    dims.append(_span(self, s.lower, s.upper))
                else:
                    dims.append(None)
                pos += 1
            elif isinstance(s, cst.Index) and isinstance(s.value, cst.Ellipsis):
                if src is not None:
                    rest = len(src) - pos - (len(elems) - n_el - 1)
                    dims.extend(src[pos:pos + rest])
                    pos += rest
            else:
                v = self.ev(s.value)
                if isinstance(v, Index):
                    if v.axis == 0:
                        on_partitions.add(len(dims))
                    dims.append(v.size)
                elif isinstance(v, MultiIndex):
                    dims.extend(v.sizes)
                elif isinstance(v, Tensor):  # indirect index tile
                    dims.append(v.partitions)
                elif self._is_ds(s.value):
                    size = self.ev(s.value.args[1].value) if len(s.value.args) > 1 else None  # type: ignore[attr-defined]
                    dims.append(size if isinstance(size, int) else None)
                elif isinstance(v, (int, Sym, LoopVar)) and not isinstance(v, bool):  # a position drops its axis
                    if pos < pdim:
                        dropped += 1
                    else:
                        gone.append(len(dims))
                else:
                    dims.append(None)
                pos += 1
        if src is not None:
            dims.extend(src[pos:])
        for at in gone:  # e.g. x[i, :] -> [1, F] and idx[i_p, 0] -> [P, 1]: a tile keeps rank 2
            if len(dims) >= 2 or (src is not None and len(src) < 2):
                break
            # an index placed on the partitions stays there (`table[j, i_p, 0]` of an unknown-layout table is
            # [P, 1], the 128 rows an indirect load gathers, not one row of P elements)
            dims.insert(len(dims) if dims and 0 in on_partitions else min(at, len(dims)), 1)
        new_pdim = max(0, pdim - dropped) if len(dims) > pdim - dropped else 0
        return Tensor(tuple(dims), t.dtype, t.buffer, "view", t.name, new_pdim, t.mutable)

    def _is_ds(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Call) and self.api_name(node.func) in ("nl.ds", "nki.language.ds")

    # -- calls ----------------------------------------------------------------------------
    def _call(self, node: cst.Call) -> object:
        name = self.api_name(node.func)
        pos: list[object] = []
        kw: dict[str, object] = {}
        for a in node.args:
            v = self.ev(a.value)
            if a.keyword is not None:
                kw[a.keyword.value] = v
            elif a.star:
                pos.append(None)
            else:
                pos.append(v)
        if isinstance(node.func, cst.Attribute) and name is None:
            owner = self.ev(node.func.value)
            if isinstance(owner, Tensor):
                return _tensor_method(owner, node.func.attr.value, pos, kw)
        if isinstance(node.func, cst.Name) and node.func.value in self.records:  # by the name the file uses
            return self.records[node.func.value].make(pos, kw)
        if isinstance(node.func, cst.Name) and node.func.value in self.classes:
            return Instance(self.classes[node.func.value])
        if name is None:
            return None
        if name in _FOLD_CALLS:
            if all(isinstance(p, (int, float, tuple)) for p in pos) and pos and not kw:
                return _FOLD_CALLS[name](*pos)
            return None
        if name == "nl.arange":
            if len(pos) == 1 and isinstance(pos[0], int):
                return Index(pos[0])
            if len(pos) >= 2 and isinstance(pos[0], int) and isinstance(pos[1], int):
                return Index(pos[1] - pos[0])
            return Index(None)
        if name == "np.dtype":  # `np.dtype(np.float32)` is that dtype
            return pos[0] if len(pos) == 1 and isinstance(pos[0], Dtype) and not kw else None
        if name == "nl.par_dim":
            return ParDim(pos[0]) if pos and isinstance(pos[0], int) else None
        if name in ("nl.program_id", "nl.num_programs", "nl.program_ndim"):
            return SYM
        if self.standalone and name.startswith("nisa."):
            return None
        if name.startswith(_PASSTHROUGH_PREFIX):
            return api_result(name, pos, kw, node)
        return None


def _linear(ev: Evaluator, node: cst.BaseExpression) -> dict[str, int] | None:
    """`node` as a linear form {symbol: coefficient, "": constant}, or None if it is not one."""
    v = ev.ev(node)
    if isinstance(v, int) and not isinstance(v, bool):
        return {"": v}
    if isinstance(node, cst.Name):
        return {node.value: 1, "": 0}
    if isinstance(node, cst.BinaryOperation):
        op = type(node.operator)
        left, right = _linear(ev, node.left), _linear(ev, node.right)
        if left is None or right is None:
            return None
        if op in (cst.Add, cst.Subtract):
            sign = 1 if op is cst.Add else -1
            out = dict(left)
            for k, c in right.items():
                out[k] = out.get(k, 0) + sign * c
            return out
        if op is cst.Multiply:
            if set(left) == {""}:
                left, right = right, left
            if set(right) == {""}:
                return {k: c * right[""] for k, c in left.items()}
    return None


def _span(ev: Evaluator, lower: cst.BaseExpression, upper: cst.BaseExpression) -> int | None:
    """`i*128:(i+1)*128` style extents: upper - lower when it folds to a constant."""
    lo, hi = _linear(ev, lower), _linear(ev, upper)
    if lo is None or hi is None:
        return None
    diff = {k: hi.get(k, 0) - lo.get(k, 0) for k in set(lo) | set(hi)}
    if all(c == 0 for k, c in diff.items() if k):
        return diff.get("", 0)
    return None


def _dtype(v: object) -> str | None:
    return v.name if isinstance(v, Dtype) else None


def _out_dtype(kw: dict, inherited: str | None) -> str | None:
    """A result's dtype: its `dtype=` when given (unknown when the walk cannot resolve it: a
    `mixed_dtype` of an undecided condition is not the operands' bf16), else the operands'."""
    return _dtype(kw["dtype"]) if "dtype" in kw else inherited


def _tensor_method(t: Tensor, meth: str, pos: list, kw: dict) -> object:
    if meth == "astype":
        return Tensor(t.shape, _dtype(pos[0]) if pos else t.dtype, t.buffer, "compute", t.name)
    if meth == "reshape":
        return Tensor(as_shape(pos[0] if len(pos) == 1 else tuple(pos)), t.dtype, t.buffer, "view", t.name, 0, t.mutable)
    if meth in ("view", "broadcast_to", "expand_dims"):
        return Tensor(as_shape(pos[0]) if meth == "broadcast_to" and pos else t.shape, t.dtype, t.buffer, "view", t.name)
    return None


def _alloc(name: str, pos: list, kw: dict) -> Tensor:
    like = pos[0] if name.endswith("_like") and pos and isinstance(pos[0], Tensor) else None
    shape_v = kw.get("shape", pos[0] if pos else None)
    shape = like.shape if like is not None else as_shape(shape_v)
    dpos = 2 if name == "nl.full" else 1
    given = "dtype" in kw or len(pos) > dpos
    dtype = _dtype(kw.get("dtype", pos[dpos] if len(pos) > dpos else None))
    if dtype is None and not given:  # float32 is the default of an omitted dtype only: one given but not
        # resolved here (`dtype=x.dtype` of an input the task does not describe) stays unknown
        dtype = like.dtype if like is not None else ("float32" if name in ("nl.zeros", "nl.ones", "nl.rand") else None)
    elif dtype is None and like is not None:
        dtype = like.dtype
    pdim = next((i for i, d in enumerate(shape or ()) if isinstance(d, ParDim)), 0)
    buf = kw.get("buffer")
    buffer = buf.rsplit(".", 1)[-1] if isinstance(buf, str) else ("sbuf" if "buffer" not in kw else None)
    if buffer and buffer.endswith(")"):
        buffer = None
    if buffer and buffer.startswith("auto_alloc"):
        buffer = None
    return Tensor(shape, dtype, buffer, "alloc", None, pdim)


def api_result(name: str, pos: list, kw: dict, node: cst.Call | None = None) -> object:
    """Result of an NKI API call in the beta dialect (REFERENCE §3.4-§3.7)."""
    first = pos[0] if pos else None
    if name in ALLOC_CALLS:
        return _alloc(name, pos, kw)
    if name in LOAD_CALLS:
        src = first if isinstance(first, Tensor) else kw.get("src")
        if not isinstance(src, Tensor):
            return Tensor(None, _dtype(kw.get("dtype")), "sbuf", "load")
        shape = src.shape
        if name == "nl.load_transpose2d" and shape:
            shape = tuple(reversed(shape))
        return Tensor(shape, _out_dtype(kw, src.dtype), "sbuf", "load", src.name)
    if name == "nl.matmul":
        x = first
        y = pos[1] if len(pos) > 1 else kw.get("y")
        tx = kw.get("transpose_x") is True or (node is not None and _kw_true(node, "transpose_x"))
        m = None
        if isinstance(x, Tensor) and x.shape and len(x.shape) >= 2:
            m = x.shape[-1] if tx else x.shape[0]
        n = y.shape[-1] if isinstance(y, Tensor) and y.shape else None
        return Tensor((m, n), "float32", "psum", "matmul")
    if name == "nisa.nc_matmul":
        s = first if isinstance(first, Tensor) else kw.get("stationary")
        mv = pos[1] if len(pos) > 1 else kw.get("moving")
        m = s.shape[-1] if isinstance(s, Tensor) and s.shape else None
        n = mv.shape[-1] if isinstance(mv, Tensor) and mv.shape else None
        return Tensor((m, n), "float32", "psum", "matmul")
    if name in ("nl.transpose", "nisa.nc_transpose"):
        if isinstance(first, Tensor) and first.shape and len(first.shape) == 2:
            buf = "psum" if name == "nisa.nc_transpose" else "sbuf"
            return Tensor((first.shape[1], first.shape[0]), _out_dtype(kw, first.dtype), buf, "compute")
        return Tensor(None, None, None, "compute")
    if name in REDUCE_CALLS:
        data = pos[1] if name == "nisa.tensor_reduce" and len(pos) > 1 else first
        data = kw.get("data", data)
        if isinstance(data, Tensor):
            shape = None
            if data.shape:
                shape = (data.shape[0], 1) if kw.get("keepdims") is True else (data.shape[0],)
            return Tensor(shape, _out_dtype(kw, data.dtype), "sbuf", "compute")
        return Tensor(None, _dtype(kw.get("dtype")), "sbuf", "compute")
    if name.startswith("nisa.activation") or name in ("nisa.tensor_scalar", "nisa.tensor_copy", "nl.copy"):
        data = pos[1] if name.startswith("nisa.activation") and len(pos) > 1 else first
        data = kw.get("data", kw.get("src", data))
        if isinstance(data, Tensor):
            return Tensor(data.shape, _out_dtype(kw, data.dtype), "sbuf", "compute")
        return Tensor(None, _dtype(kw.get("dtype")), "sbuf", "compute")
    tensors = [p for p in list(pos) + list(kw.values()) if isinstance(p, Tensor)]
    if name in ("nl.store", "nl.device_print", "nisa.dma_copy", "nl.atomic_rmw", "nl.random_seed"):
        return None
    if tensors:  # element-wise nl/nisa ops: broadcast shapes, promote dtypes
        shape, dtype = tensors[0].shape, tensors[0].dtype
        for t in tensors[1:]:
            shape, dtype = broadcast(shape, t.shape), promote(dtype, t.dtype)
        for p in pos:
            if isinstance(p, (int, float)) and not isinstance(p, bool):
                dtype = promote_scalar(dtype, p)
        return Tensor(shape, _out_dtype(kw, dtype), "sbuf", "compute")
    return None


def _kw_true(node: cst.Call, key: str) -> bool:
    for a in node.args:
        if a.keyword is not None and a.keyword.value == key:
            return isinstance(a.value, cst.Name) and a.value.value == "True"
    return False


def alias_for(dotted: str) -> str:
    return canonical_module(dotted)


def _placed_arange(base: Index, elems) -> Index:
    """`nl.arange(n)[:, None]` runs along axis 0 of the arange family, `[None, :]` along axis 1."""
    slices = [n for n, e in enumerate(elems) if isinstance(e.slice, cst.Slice)]
    nones = [e for e in elems if isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.Name)
             and e.slice.value.value == "None"]
    if base.grid == 0 and len(slices) == 1 and len(nones) == len(elems) - 1:
        return Index(base.size, ARANGE_GRID, slices[0])
    return base
