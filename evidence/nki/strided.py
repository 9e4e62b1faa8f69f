"""Affine index grids as strided views: `x[i * 128 + nl.arange(128)[:, None], nl.arange(512)[None, :]]`.

Compiler-style kernels index every tile with `nl.arange`/`nl.mgrid` expressions. Each index of
such a subscript is an affine function of the grid axes (`start + sum(step_g * i_g)`), so the
elements it addresses lie at fixed strides in memory: a numpy strided view serves the access with
no gather and no copy, and writes through it land in place. A subscript is served this way when
every index is affine, in range (an out-of-range index needs the op's mask, so it stays a lazy
gather), and no two grid points address the same element (a view must not alias itself).
"""

from __future__ import annotations

from operator import le, lt

import numpy as np
from numpy.lib.stride_tricks import as_strided

# Per array axis: (start index, ((grid axis, step), ...)).
Plan = tuple[tuple[int, tuple[tuple[int, int], ...]], ...]


def _affine(a: np.ndarray, grid: tuple[int, ...]) -> tuple[int, tuple[tuple[int, int], ...]] | None:
    """`a` (broadcastable to `grid`) as start + sum(step_g * i_g), or None when it is not affine."""
    shift = len(grid) - a.ndim
    flat = a.reshape(-1)
    start = int(flat[0])
    varying = [g for g, n in enumerate(a.shape) if n > 1]
    if not varying:
        return start, ()
    if len(varying) == 1:  # an open-grid index (arange lifted to one axis): an arithmetic progression?
        step = int(flat[1]) - start
        if step == 0 or not np.array_equal(flat, np.arange(start, start + step * flat.size, step)):
            return None
        return start, ((varying[0] + shift, step),)
    steps = []
    expected = np.full((1,) * a.ndim, start, dtype=np.int64)
    for g in varying:
        probe = [0] * a.ndim
        probe[g] = 1
        step = int(a[tuple(probe)]) - start
        steps.append((g + shift, step))
        shape = [1] * a.ndim
        shape[g] = a.shape[g]
        expected = expected + step * np.arange(a.shape[g], dtype=np.int64).reshape(shape)
    if not np.array_equal(np.broadcast_to(expected, a.shape), a):
        return None
    return start, tuple(steps)


def plan(comps, dims: tuple[int, ...], grid: tuple[int, ...], forms=None) -> Plan | None:
    """The affine form of every index of a subscript into an array of shape `dims`, or None.

    `forms` (optional, per index) are the forms the index expressions carried (indexing.IndexExpr),
    with axes counted from the left of each index array; the others are found by scanning."""
    out = []
    for i, (c, n) in enumerate(zip(comps, dims)):
        if isinstance(c, np.ndarray):
            known = forms[i] if forms is not None and i < len(forms) else None
            if known is not None:
                shift = len(grid) - c.ndim
                form = (known[0], tuple((g + shift, s) for g, s in known[1]))
            else:
                form = _affine(c, grid)
            if form is None:
                return None
            start, steps = form
            sizes = {g: grid[g] for g, _ in steps}
            lo = start + sum(min(0, s * (sizes[g] - 1)) for g, s in steps)
            hi = start + sum(max(0, s * (sizes[g] - 1)) for g, s in steps)
            if lo < 0 or hi >= n:
                return None  # out of range: only a mask makes it legal, resolved per instruction
            out.append((start, steps))
        else:
            out.append((int(c) % n, ()))
    axes = [g for _, steps in out for g, _ in steps]
    simple = len(axes) == len(set(axes)) and all(len(steps) <= 1 for _, steps in out)
    if not (simple and all(grid[g] == 1 or g in axes for g in range(len(grid)))) and not _injective(out, dims, grid):
        return None
    return tuple(out)


def _injective(p, dims: tuple[int, ...], grid: tuple[int, ...]) -> bool:
    """No two grid points address one element: with the grid axes sorted by their (row-major) element
    stride, each stride exceeds the span of all smaller ones (a sufficient condition)."""
    row = np.cumprod((1,) + tuple(reversed(dims[1:])))[::-1] if dims else ()
    strides = [0] * len(grid)
    for (_, steps), r in zip(p, row):
        for g, s in steps:
            strides[g] += s * int(r)
    axes = sorted((abs(s), grid[g]) for g, s in enumerate(strides) if grid[g] > 1)
    span = 0
    for stride, n in axes:
        if stride <= span:
            return False
        span += stride * (n - 1)
    return True


def view(arr: np.ndarray, p: Plan, grid: tuple[int, ...]) -> np.ndarray:
    """The strided view of `arr` a plan addresses, shaped like the grid (writable when `arr` is)."""
    used = [steps[0][0] for _, steps in p if len(steps) == 1]
    if len(used) == sum(1 for _, steps in p if steps) and used == sorted(set(used)):
        # each index walks its own grid axis, in axis order: plain slicing, then unit axes for the grid
        key = []
        for start, steps in p:
            if not steps:
                key.append(start)
                continue
            g, s = steps[0]
            stop = start + s * grid[g]
            key.append(slice(start, stop if stop >= 0 else None, s))
        return arr[(*key, Ellipsis)].reshape(grid)  # Ellipsis: an all-integer key stays a view (`cut_key`)
    start = arr[tuple(s for s, _ in p) + (Ellipsis,)]
    strides = [0] * len(grid)
    for (_, steps), axis_stride in zip(p, arr.strides):
        for g, s in steps:
            strides[g] += s * axis_stride
    return as_strided(start, shape=grid, strides=strides, writeable=arr.flags.writeable)


def tile_shape(grid: tuple[int, ...], indices: int) -> tuple[list[int], list[int]]:
    """The tile shape of an access over `grid` by `indices` index arrays, and the grid axes it keeps: a
    grid of higher rank than the subscript (`ix, iw, iy = nl.mgrid[0:128, 0:1, 0:F]` used as a[ix, iy])
    leaves unit axes no position uses, which the tile drops, keeping the partition axis."""
    shape, kept = list(grid), list(range(len(grid)))
    while len(shape) > indices:
        units = [i for i in range(1, len(shape)) if shape[i] == 1]
        if not units:
            break
        del shape[units[-1]], kept[units[-1]]
    return shape, kept


# --- the per-subscript fast path: structure planned once per shape of subscript, starts per call -------

class Recipe:
    """What an affine subscript's structure decides, whatever its start offsets: the grid, the tile
    shape, each index's steps and span, and how to cut the view (slices, or as_strided)."""

    __slots__ = ("grid", "shape", "dropped", "steps", "lo", "hi", "slices", "extents", "first", "stop", "leading_ints")

    def __init__(self, grid, shape, dropped, steps, lo, hi, slices, dims=None, leading_ints=0) -> None:
        self.grid, self.shape, self.dropped = grid, shape, dropped
        self.steps, self.lo, self.hi = steps, lo, hi
        # per axis of the array (of shape `dims`), the starts that keep the view in range: first <= start < stop
        self.first = tuple(-x for x in lo)
        self.stop = None if dims is None else tuple(n - x for n, x in zip(dims, hi))
        self.leading_ints = leading_ints  # how many indices lead with plain integers (block coordinates)
        self.slices = slices  # per index: None (an integer) or (step, count); None when not sliceable
        # per index, how many elements the view spans from its start when it is one box of the array
        # (unit steps, evidence.nki.coverage); None when it is not
        self.extents = None
        if slices is not None and all(sl is None or sl[0] == 1 or sl[1] == 1 for sl in slices):
            self.extents = tuple(1 if sl is None else sl[1] for sl in slices)


_NO_VIEW = object()  # cached: this subscript's structure is never a view (self-overlapping)
_recipes: dict = {}


def recipe(dims: tuple[int, ...], sig: tuple) -> Recipe | None:
    """The recipe of a subscript into `dims`; `sig` per index: None for an integer, else the index
    expression's structure (`indexing.Structure`: shape and steps). None when the general path must decide."""
    key = (dims, sig)
    r = _recipes.get(key)
    if r is None:
        if len(_recipes) > 4096:
            _recipes.clear()
        r = _recipes[key] = _build(dims, sig) or _NO_VIEW
    return None if r is _NO_VIEW else r


def _build(dims: tuple[int, ...], sig: tuple) -> Recipe | None:
    shapes = [s.shape for s in sig if s is not None]
    if len(sig) > len(dims) or (any(len(s) == 1 for s in shapes) and any(len(s) > 1 for s in shapes)):
        return None  # the general path lifts or reports these
    rest = dims[len(sig):]
    try:
        nb = len(np.broadcast_shapes(*shapes))
    except ValueError:
        return None
    r = len(rest)
    comps = [((), ()) if s is None else (s.shape + (1,) * r, s.steps) for s in sig]
    for i, d in enumerate(rest):  # un-indexed trailing axes become explicit grids, as in the general path
        shape = [1] * (nb + r)
        shape[nb + i] = d
        comps.append((tuple(shape), ((nb + i, 1),) if d > 1 else ()))
    try:
        grid = np.broadcast_shapes(*[c[0] for c in comps])
    except ValueError:
        return None
    shape, kept = tile_shape(grid, len(comps))
    steps = []
    for cshape, st in comps:
        shift = len(grid) - len(cshape) if cshape else 0
        steps.append(tuple((g + shift, s) for g, s in st))
    lo = tuple(sum(min(0, s * (grid[g] - 1)) for g, s in st) for st in steps)
    hi = tuple(sum(max(0, s * (grid[g] - 1)) for g, s in st) for st in steps)
    p = tuple((0, st) for st in steps)
    axes = [g for st in steps for g, _ in st]
    simple = len(axes) == len(set(axes)) and all(len(st) <= 1 for st in steps)
    if not (simple and all(grid[g] == 1 or g in axes for g in range(len(grid)))) and not _injective(p, dims, grid):
        return None
    used = [st[0][0] for st in steps if len(st) == 1]
    slices = None
    if len(used) == sum(1 for st in steps if st) and used == sorted(set(used)):
        slices = tuple((st[0][1], grid[st[0][0]]) if st else None for st in steps)
    dropped = tuple(i for i in range(len(grid)) if i not in kept)
    leading = next((i for i, s in enumerate(sig) if s is not None), len(sig))
    return Recipe(tuple(grid), tuple(shape), dropped, tuple(steps), lo, hi, slices, dims, leading)


def in_range(rc: Recipe, starts: tuple) -> bool:
    """Recipe `rc`'s view from `starts` lies inside the array (else only a mask can make it legal)."""
    return all(map(le, rc.first, starts)) and all(map(lt, starts, rc.stop))


def cut_key(rc: Recipe, starts) -> tuple | None:
    """The numpy subscript that cuts recipe `rc`'s view from `starts` (None: the view needs as_strided).
    Built once per access and applied to the data and each bookkeeping array alike (`cut`)."""
    if rc.slices is None:
        return None
    key = []
    for start, sl in zip(starts, rc.slices):
        if sl is None:
            key.append(start)
        else:
            stop = start + sl[0] * sl[1]
            key.append(slice(start, stop if stop >= 0 else None, sl[0]))
    # the trailing Ellipsis keeps an all-integer key (every index a one-element arange) a view: numpy returns a
    # copied scalar for `arr[0, 0]`, so a write through it was lost
    return (*key, Ellipsis)


def cut(arr: np.ndarray, rc: Recipe, starts, key: tuple | None = None) -> np.ndarray:
    """The view of `arr` that recipe `rc` addresses from `starts`, shaped like the tile; `key` is
    `cut_key(rc, starts)` when the caller has it."""
    if rc.slices is not None:
        v = arr[cut_key(rc, starts) if key is None else key]
        if v.shape != rc.grid:
            v = v.reshape(rc.grid)
    else:
        v = view(arr, tuple(zip(starts, rc.steps)), rc.grid)
    return np.squeeze(v, axis=rc.dropped) if rc.dropped else v
