"""Index expressions: `nl.arange`, `nl.mgrid`, `nl.ds`, and the masks built from them.

NKI index values are affine expressions over index grids that broadcast like numpy. The
simulator evaluates them eagerly to small int arrays (open grids, so a [128, 512] grid costs
128 + 512 integers) and keeps comparisons of them as boolean mask arrays.
"""

from __future__ import annotations

import numpy as np

from evidence.nki import state as _state
from evidence.nki.errors import SimulationError


# The affine form of an index array: (start, ((axis, step), ...)), value = start + sum(step * i_axis),
# axes counted from the left of the array's own shape. Kept alongside the values so a subscript can be
# served as a strided view (evidence.nki.strided) without scanning the arrays.
Form = tuple[int, tuple[tuple[int, int], ...]]


def _scaled(f: Form | None, k: int) -> Form | None:
    return None if f is None else (f[0] * k, tuple((g, s * k) for g, s in f[1] if s * k))


def _summed(f: Form | None, fn: int, h: Form | None, hn: int) -> Form | None:
    """The form of the sum of an `fn`-dim and an `hn`-dim index (numpy broadcasting aligns trailing axes)."""
    if f is None or h is None:
        return None
    nd = max(fn, hn)
    steps: dict[int, int] = {}
    for st, shift in ((f[1], nd - fn), (h[1], nd - hn)):
        for g, s in st:
            steps[g + shift] = steps.get(g + shift, 0) + s
    return f[0] + h[0], tuple((g, s) for g, s in sorted(steps.items()) if s)


def _lifted(f: Form | None, shape: tuple[int, ...], key: object) -> tuple[Form, tuple[int, ...]] | None:
    """The form and shape after `[:, None]`-style lifting (only full slices and new axes keep the form)."""
    if f is None:
        return None
    key = key if isinstance(key, tuple) else (key,)
    moved, old, new, out = {}, 0, 0, []
    for k in key:
        if k is None:
            new += 1
            out.append(1)
        elif isinstance(k, slice) and k == slice(None) and old < len(shape):
            moved[old] = new
            out.append(shape[old])
            old, new = old + 1, new + 1
        else:
            return None
    for rest in range(old, len(shape)):
        moved[rest] = new + rest - old
        out.append(shape[rest])
    return (f[0], tuple((moved[g], s) for g, s in f[1])), tuple(out)


def _values(f: Form, shape: tuple[int, ...]) -> np.ndarray:
    """The int64 index values of an affine form over `shape`."""
    a = np.full(shape, f[0], dtype=np.int64)
    for g, s in f[1]:
        axis = [1] * len(shape)
        axis[g] = shape[g]
        a += s * np.arange(shape[g], dtype=np.int64).reshape(axis)
    return a


class Structure:
    """The shape and affine steps of index expressions, whatever their start: one object per distinct
    structure (`structure`), so the subscript caches of subscripts.affine_view and strided.recipe hash
    and compare them by identity instead of walking nested tuples on every access."""

    __slots__ = ("shape", "steps")

    def __init__(self, shape: tuple[int, ...], steps: tuple[tuple[int, int], ...]) -> None:
        self.shape = shape
        self.steps = steps


_STRUCTURES: dict = {}


def structure(shape: tuple[int, ...], steps: tuple[tuple[int, int], ...]) -> Structure:
    s = _STRUCTURES.get((shape, steps))
    if s is None:
        if len(_STRUCTURES) >= 4096:
            _STRUCTURES.clear()  # a second object for a structure only makes the caches miss, never answer wrong
        s = _STRUCTURES[(shape, steps)] = Structure(shape, steps)
    return s


class IndexExpr:
    """An integer index grid (result of arange/mgrid and affine arithmetic on them).

    Affine expressions keep only their form and shape: the values are built on first use (`a`), so a
    subscript served as a strided view (subscripts.index) never computes them."""

    __slots__ = ("_a", "lifted", "form", "shape", "_lifts", "_structure")
    __array_priority__ = 100
    __array_ufunc__ = None  # make `np.int64(2) * expr` come back to our reflected operators

    def __init__(self, a: np.ndarray | None, lifted: bool = True, form: Form | None = None,
                 shape: tuple[int, ...] | None = None) -> None:
        """`a`: the values, or None for a lazy expression (then `form` and `shape` are required)."""
        self._a = a
        self.lifted = lifted
        if a is not None:
            shape = a.shape
            if form is None and a.size == 1:
                form = (int(a.reshape(-1)[0]), ())
        self.form = form
        self.shape = tuple(shape)
        self._lifts = None  # `[:, None]` and `[None, :]` of this expression (expressions are immutable)
        self._structure = None

    @property
    def structure(self) -> Structure:
        """Shape and steps of an affine expression (one object per distinct structure); only asked of
        expressions with a form."""
        s = self._structure
        if s is None:
            s = self._structure = structure(self.shape, self.form[1])
        return s

    @property
    def a(self) -> np.ndarray:
        if self._a is None:
            self._a = _values(self.form, self.shape)
            self._a.flags.writeable = False  # shared by every use of this (cached) expression
        return self._a

    def __getitem__(self, key: object) -> IndexExpr:
        if type(key) is tuple and len(key) == 2:
            lead, last = key
            up = lead is None  # `[None, :]` (True) or `[:, None]` (False), once per index expression
            if (type(last) is slice and last == _ALL) if up else (last is None and type(lead) is slice and lead == _ALL):
                lifts = self._lifts
                cached = lifts.get(up) if lifts is not None else None
                if cached is None:
                    cached = self._lift(key)
                    if self._lifts is None:
                        self._lifts = {}
                    self._lifts[up] = cached
                return cached
        return self._lift(key)

    def _lift(self, key: object) -> IndexExpr:
        lifted = _lifted(self.form, self.shape, key)
        if lifted is not None and self._a is None:
            return IndexExpr(None, True, *lifted)
        return IndexExpr(self.a[key], True, None if lifted is None else lifted[0])

    def _bin(self, other: object, fn, reverse: bool = False) -> IndexExpr:
        if type(other) is int and fn is np.add and self.form is not None:
            return self._shifted(other)
        lifted = self.lifted and getattr(other, "lifted", True)
        if self.form is not None and fn in _AFFINE_FNS:
            h = other.form if isinstance(other, IndexExpr) else _int_form(other)
            if h is not None:  # affine on both sides: the result is a form too, no values needed yet
                oshape = other.shape if isinstance(other, IndexExpr) else ()
                form = self._combined(h, len(oshape), fn, reverse)
                if form is not None:
                    shape = self.shape if not oshape or oshape == self.shape else np.broadcast_shapes(self.shape, oshape)
                    return IndexExpr(None, lifted, form, shape)
        # a tile holding a runtime offset (`i_f + idx[0, j]`) contributes its values
        o = other.a if isinstance(other, IndexExpr) else other.as_index() if hasattr(other, "as_index") else other
        r = np.asarray(fn(o, self.a) if reverse else fn(self.a, o))
        h = _scalar_form(o) if not isinstance(other, IndexExpr) else other.form
        form = None
        if self.form is not None and fn in _AFFINE_FNS and h is not None:
            form = self._combined(h, np.ndim(o), fn, reverse)
        return IndexExpr(r, lifted, form)

    def _combined(self, h: Form, hn: int, fn, reverse: bool) -> Form | None:
        """The form of `self fn other`, `other` having form `h` and `hn` dimensions."""
        f, fn_ = self.form, len(self.shape)
        if fn is np.multiply:
            if h[1] and f[1]:
                return None  # a product of two index grids is not affine
            return _scaled(f, h[0]) if not h[1] else _scaled(h, f[0])
        if fn is np.subtract:
            if reverse:
                return _summed(h, hn, _scaled(f, -1), fn_)
            return _summed(f, fn_, _scaled(h, -1), hn)
        return _summed(f, fn_, h, hn)

    def _shifted(self, by: int) -> IndexExpr:
        """`i * 128 + nl.arange(128)[:, None]`, the compiler-style hot path: the same structure, only the
        start of the affine form moves (built without __init__'s checks)."""
        e = IndexExpr.__new__(IndexExpr)
        e._a, e.lifted, e.form, e.shape = None, self.lifted, (self.form[0] + by, self.form[1]), self.shape
        e._lifts, e._structure = None, self._structure
        return e

    def __add__(self, o): return self._shifted(o) if type(o) is int and self.form is not None else self._bin(o, np.add)
    def __radd__(self, o):
        return self._shifted(o) if type(o) is int and self.form is not None else self._bin(o, np.add, True)
    def __sub__(self, o): return self._bin(o, np.subtract)
    def __rsub__(self, o): return self._bin(o, np.subtract, True)
    def __mul__(self, o): return self._bin(o, np.multiply)
    def __rmul__(self, o): return self._bin(o, np.multiply, True)
    def __floordiv__(self, o): return self._bin(o, np.floor_divide)
    def __rfloordiv__(self, o): return self._bin(o, np.floor_divide, True)
    def __mod__(self, o): return self._bin(o, np.mod)
    def __rmod__(self, o): return self._bin(o, np.mod, True)

    def __neg__(self):
        if self._a is None:
            return IndexExpr(None, self.lifted, _scaled(self.form, -1), self.shape)
        return IndexExpr(-self.a, self.lifted, _scaled(self.form, -1))

    def _cmp(self, other: object, fn) -> MaskExpr:
        o = other.a if isinstance(other, IndexExpr) else other
        return MaskExpr(fn(self.a, o))

    def __lt__(self, o): return self._cmp(o, np.less)
    def __le__(self, o): return self._cmp(o, np.less_equal)
    def __gt__(self, o): return self._cmp(o, np.greater)
    def __ge__(self, o): return self._cmp(o, np.greater_equal)
    def __eq__(self, o): return self._cmp(o, np.equal)  # type: ignore[override]
    def __ne__(self, o): return self._cmp(o, np.not_equal)  # type: ignore[override]
    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        raise SimulationError(
            "err_control_flow_condition_depending_on_arange",
            "control flow cannot depend on an nl.arange/nl.mgrid expression",
        )

    def __repr__(self) -> str:
        return f"IndexExpr(shape={self.shape})"


_AFFINE_FNS = (np.add, np.subtract, np.multiply)


_ALL = slice(None)


def _int_form(o: object) -> Form | None:
    return (int(o), ()) if isinstance(o, (int, np.integer)) and not isinstance(o, bool) else None


def _scalar_form(o: object) -> Form | None:
    """The form of the other operand of index arithmetic: an index expression's, an integer's, or a
    one-element integer array's (a runtime offset read from a tile); None when not affine."""
    if isinstance(o, IndexExpr):
        return o.form
    if isinstance(o, (int, np.integer)):
        return _int_form(o)
    if isinstance(o, np.ndarray) and o.size == 1 and o.dtype.kind in "iu":
        return int(o.reshape(-1)[0]), ()
    return None


class MaskExpr:
    """A compile-time predicate over index expressions; combine with & and | only.

    In the error model's reversed-order run, `born` names the affine_range iterations ((loop token, iteration))
    the predicate was built in, or built from predicates of: a mask a later iteration reuses from an earlier one
    (Python state, fixed while tracing in program order) is not reordered by the compiled loop
    (`order_dependent_mask`)."""

    __slots__ = ("a", "born")

    def __init__(self, a: np.ndarray, born: tuple = ()) -> None:
        self.a = np.asarray(a, dtype=bool)
        st = _state.get()
        if st is not None and st.affine_reversed:
            born = born + tuple((f.token, f.it) for f in st.loops if f.kind == "affine")
        self.born = born

    def __and__(self, o): return MaskExpr(self.a & _mask_array(o), self.born + _born(o))
    def __rand__(self, o): return MaskExpr(_mask_array(o) & self.a, self.born + _born(o))
    def __or__(self, o): return MaskExpr(self.a | _mask_array(o), self.born + _born(o))
    def __ror__(self, o): return MaskExpr(_mask_array(o) | self.a, self.born + _born(o))
    def __invert__(self): return MaskExpr(~self.a, self.born)

    def __bool__(self) -> bool:
        raise SimulationError(
            "err_ambiguous_tensor_truth_value", "use & and | (not `and`/`or`) to combine mask predicates"
        )


def _born(m: object) -> tuple:
    return m.born if isinstance(m, MaskExpr) else ()


def order_dependent_mask(st, mask: object) -> None:
    """In the reversed-order run, note the first line that uses a mask built in another iteration of an enclosing
    affine_range loop (`mask = (i_p + 128 * i < n) & mask`): reversing Python's iterations changed what the kernel
    traced, so that run is not the compiled loop in another order (the error model then drops it)."""
    if not st.affine_reversed or st.order_state_line or not isinstance(mask, MaskExpr) or not mask.born:
        return
    now = {f.token: f.it for f in st.loops}
    if any(now.get(token, it) != it for token, it in mask.born):
        st.order_state_line = st.where()[1] or -1


def _mask_array(m: object) -> np.ndarray:
    if isinstance(m, MaskExpr):
        return m.a
    return np.asarray(bool(m))


def mask_array(mask: object) -> np.ndarray | None:
    """The boolean array of an op's `mask=` argument, or None for 'everything'."""
    if mask is None or mask is True:
        return None
    if isinstance(mask, MaskExpr):
        return mask.a
    if isinstance(mask, (bool, np.bool_)):
        return np.asarray(bool(mask))
    raise SimulationError("err_unsupported_expression_in_mask", f"unsupported mask expression {mask!r}")


def fit_mask(mask: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Align a mask with a tile: numpy broadcasting after appending the fewest unit axes.

    Appending nothing is numpy's trailing alignment; appending all is the partition-leading
    alignment of a [P] predicate; intermediate counts cover index grids of different rank.
    """
    if mask.shape == tuple(shape):
        return mask
    for k in range(0, max(len(shape) - mask.ndim, 0) + 1):
        cand = mask.shape + (1,) * k
        try:
            if np.broadcast_shapes(cand, shape) == tuple(shape):
                return mask.reshape(cand)
        except ValueError:
            continue
    squeezed = mask.reshape([d for d in mask.shape if d != 1] or [1])
    if squeezed.ndim < mask.ndim:
        return fit_mask(squeezed, shape)
    raise _state.current().error(
        "err_unsupported_expression_in_mask", f"mask of shape {list(mask.shape)} does not fit the tile {list(shape)}"
    )


def full_mask(mask: np.ndarray, shape) -> np.ndarray:
    """A mask aligned with a tile (see `fit_mask`) and broadcast to its full shape (read-only)."""
    shape = tuple(shape)
    return np.broadcast_to(fit_mask(mask, shape), shape)


def arange(*args: int) -> IndexExpr:
    """nl.arange(stop) or nl.arange(start, stop[, step]): a 1-D index that must be lifted to 2-D."""
    key = args if len(args) == 1 and type(args[0]) is int else tuple(int(x) for x in args)
    expr = _ARANGES.get(key)
    if expr is None:  # shared: index expressions are immutable, and kernels build the same ones per iteration
        r = range(*key)
        if not r:
            return IndexExpr(np.arange(0, dtype=np.int64), lifted=False)
        expr = IndexExpr(None, False, (r.start, ((0, r.step),) if len(r) > 1 else ()), (len(r),))
        if len(_ARANGES) < 1024:
            _ARANGES[key] = expr
    return expr


_ARANGES: dict = {}


class _Grid(tuple):
    """Result of nl.mgrid[...]: unpackable, and readable as .p (partition), .x, .y, .z, .w."""

    __slots__ = ()

    def __getattr__(self, attr: str) -> IndexExpr:
        order = "pxyzw"
        if attr in order and order.index(attr) < len(self):
            return self[order.index(attr)]
        raise AttributeError(attr)


class _MGrid:
    def __getitem__(self, key: object) -> _Grid:
        keys = key if isinstance(key, tuple) else (key,)
        axes = [np.arange(k.start or 0, k.stop, k.step or 1, dtype=np.int64) for k in keys]
        n = len(axes)
        grids = []
        for i, ax in enumerate(axes):
            shape = [1] * n
            shape[i] = ax.size
            step = int(keys[i].step or 1)
            form = (int(ax[0]), ((i, step),) if ax.size > 1 else ()) if ax.size else None
            grids.append(IndexExpr(ax.reshape(shape), form=form))
        return _Grid(grids)


mgrid = _MGrid()


def ds(start: int, size: int) -> slice:
    """nl.ds(start, size): a dynamic slice, start:start+size."""
    return slice(int(start), int(start) + int(size))
