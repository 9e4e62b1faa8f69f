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


def _summed(f: Form | None, fa: np.ndarray, h: Form | None, ha: np.ndarray) -> Form | None:
    """The form of fa + ha (numpy broadcasting aligns trailing axes)."""
    if f is None or h is None:
        return None
    nd = max(fa.ndim, ha.ndim)
    steps: dict[int, int] = {}
    for st, shift in ((f[1], nd - fa.ndim), (h[1], nd - ha.ndim)):
        for g, s in st:
            steps[g + shift] = steps.get(g + shift, 0) + s
    return f[0] + h[0], tuple((g, s) for g, s in sorted(steps.items()) if s)


def _lifted(f: Form | None, a: np.ndarray, key: object) -> Form | None:
    """The form after `[:, None]`-style lifting (only full slices and new axes keep it)."""
    if f is None:
        return None
    key = key if isinstance(key, tuple) else (key,)
    moved, old, new = {}, 0, 0
    for k in key:
        if k is None:
            new += 1
        elif isinstance(k, slice) and k == slice(None):
            moved[old] = new
            old, new = old + 1, new + 1
        else:
            return None
    for rest in range(old, a.ndim):
        moved[rest] = new + rest - old
    return f[0], tuple((moved[g], s) for g, s in f[1])


class IndexExpr:
    """An integer index grid (result of arange/mgrid and affine arithmetic on them)."""

    __slots__ = ("a", "lifted", "form")
    __array_priority__ = 100
    __array_ufunc__ = None  # make `np.int64(2) * expr` come back to our reflected operators

    def __init__(self, a: np.ndarray, lifted: bool = True, form: Form | None = None) -> None:
        self.a = a
        self.lifted = lifted
        if form is None and a.size == 1:
            form = (int(a.reshape(-1)[0]), ())
        self.form = form

    @property
    def shape(self) -> tuple[int, ...]:
        return self.a.shape

    def __getitem__(self, key: object) -> IndexExpr:
        return IndexExpr(self.a[key], True, _lifted(self.form, self.a, key))

    def _bin(self, other: object, fn, reverse: bool = False) -> IndexExpr:
        # a tile holding a runtime offset (`i_f + idx[0, j]`) contributes its values
        o = other.a if isinstance(other, IndexExpr) else other.as_index() if hasattr(other, "as_index") else other
        r = np.asarray(fn(o, self.a) if reverse else fn(self.a, o))
        return IndexExpr(r, self.lifted and getattr(other, "lifted", True), self._form(other, o, fn, reverse))

    def _form(self, other, o, fn, reverse: bool) -> Form | None:
        f = self.form
        if f is None or fn not in (np.add, np.subtract, np.multiply):
            return None
        if isinstance(other, IndexExpr):
            h = other.form
        elif isinstance(o, (int, np.integer)) and not isinstance(o, bool):
            h = (int(o), ())
        elif isinstance(o, np.ndarray) and o.size == 1 and o.dtype.kind in "iu":  # a runtime offset tile
            h = (int(o.reshape(-1)[0]), ())
        else:
            return None
        oa = o if isinstance(o, np.ndarray) else np.empty(())
        if fn is np.multiply:
            if h is None or h[1] and f[1]:
                return None  # a product of two index grids is not affine
            return _scaled(f, h[0]) if not h[1] else _scaled(h, f[0])
        if fn is np.subtract:
            if reverse:
                f, h = h, f
                self_a, other_a = oa, self.a
            else:
                self_a, other_a = self.a, oa
            return _summed(f, self_a, _scaled(h, -1), other_a)
        return _summed(f, self.a, h, oa)

    def __add__(self, o): return self._bin(o, np.add)
    def __radd__(self, o): return self._bin(o, np.add, True)
    def __sub__(self, o): return self._bin(o, np.subtract)
    def __rsub__(self, o): return self._bin(o, np.subtract, True)
    def __mul__(self, o): return self._bin(o, np.multiply)
    def __rmul__(self, o): return self._bin(o, np.multiply, True)
    def __floordiv__(self, o): return self._bin(o, np.floor_divide)
    def __rfloordiv__(self, o): return self._bin(o, np.floor_divide, True)
    def __mod__(self, o): return self._bin(o, np.mod)
    def __rmod__(self, o): return self._bin(o, np.mod, True)
    def __neg__(self): return IndexExpr(-self.a, self.lifted, _scaled(self.form, -1))

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
        return f"IndexExpr(shape={self.a.shape})"


class MaskExpr:
    """A compile-time predicate over index expressions; combine with & and | only."""

    __slots__ = ("a",)

    def __init__(self, a: np.ndarray) -> None:
        self.a = np.asarray(a, dtype=bool)

    def __and__(self, o): return MaskExpr(self.a & _mask_array(o))
    def __rand__(self, o): return MaskExpr(_mask_array(o) & self.a)
    def __or__(self, o): return MaskExpr(self.a | _mask_array(o))
    def __ror__(self, o): return MaskExpr(_mask_array(o) | self.a)
    def __invert__(self): return MaskExpr(~self.a)

    def __bool__(self) -> bool:
        raise SimulationError(
            "err_ambiguous_tensor_truth_value", "use & and | (not `and`/`or`) to combine mask predicates"
        )


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
    a = np.arange(*[int(x) for x in args], dtype=np.int64)
    step = int(args[2]) if len(args) > 2 else 1
    form = (int(a[0]), ((0, step),) if a.size > 1 else ()) if a.size else None
    return IndexExpr(a, lifted=False, form=form)


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
