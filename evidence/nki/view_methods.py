"""The view methods of nki's `NkiTensor` (nki 0.5+: `slice`, `select`, `permute`, `broadcast`,
`expand_dim`, `squeeze_dim`, `flatten_dims`, `reshape_dim`, `get_pattern`, `is_contiguous`, `strides`,
`offset`), as library kernels call them (`x.flatten_dims(start_dim=0, end_dim=1).slice(dim=0, start=a,
end=b)`, `t.permute(dims=[0, 2, 1])`).

Every view is an access pattern over the allocation: a view's layout is (shape, strides, offset) in
elements of the allocation's row-major layout, read off the numpy view that backs the tensor. Each
method derives the new layout and hands it to `Tensor.ap`, which already serves static patterns as
strided numpy views (stride 0 broadcasts), so reads, writes, traffic and findings are those of `.ap`.
On-chip tensors keep their partition axis first: a method that would move, merge, split, drop or
broadcast it is an error, as in nki.
"""

from __future__ import annotations

import numpy as np

from evidence.nki import state as _state
from evidence.nki.access_pattern import start_of

ONCHIP = ("sbuf", "psum")


def layout(t) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """(shape, strides, offset) of tensor view `t`, in elements of its allocation's row-major layout."""
    st = _state.current()
    alloc = t.alloc
    if t.adv is not None:
        raise st.error("err_invalid_access_pattern", "a view method needs a strided view, not an indexed gather")
    pairs = [(v, b) for v, b in ((t.data, alloc.data), (t.stamp, alloc.stamp), (t.lmask, alloc.lmask))
             if isinstance(v, np.ndarray) and isinstance(b, np.ndarray) and b.flags.c_contiguous]
    if not pairs or pairs[0][0].ndim != len(t.shape):
        raise st.error("unsupported_op", f"view methods of {list(t.shape)} {t.alloc.buffer} tensors with block "
                       "dimensions are not simulated; use slicing or .ap()")
    view, base = pairs[0]
    size = base.itemsize or 1
    strides = tuple(int(s) // size for s in view.strides)
    offset = start_of(view, base)
    return tuple(int(n) for n in t.shape), strides, int(offset)


def _apply(t, shape, strides, offset):
    _, _, own = layout(t)
    # `.ap` counts its offset from where `t` begins
    return t.ap(pattern=[[s, n] for s, n in zip(strides, shape)], offset=offset - own)


def _dim(t, dim: int, ndim: int | None = None) -> int:
    n = len(t.shape) if ndim is None else ndim
    d = int(dim)
    if not -n <= d < n:
        raise _state.current().error("err_invalid_access_pattern", f"dimension {dim} out of range for a {n}-D view")
    return d % n


def _onchip_guard(t, dim: int, what: str) -> None:
    if t.alloc.buffer in ONCHIP and dim == 0:
        raise _state.current().error("err_invalid_access_pattern",
                                     f"{what} cannot change the partition dimension (dim 0) of an on-chip tensor")


def slice_(t, dim, start, end, step=1):
    shape, strides, offset = layout(t)
    d = _dim(t, dim)
    start, end, step = int(start), min(int(end), shape[d]), int(step)
    if step <= 0 or not 0 <= start < end:
        raise _state.current().error("err_invalid_access_pattern",
                                     f"slice(dim={d}, start={start}, end={end}, step={step}) of a {list(shape)} view")
    new_shape = list(shape)
    new_shape[d] = (end - start + step - 1) // step
    new_strides = list(strides)
    new_strides[d] = strides[d] * step
    return _apply(t, new_shape, new_strides, offset + strides[d] * start)


def squeeze_dim(t, dim):
    shape, strides, offset = layout(t)
    d = _dim(t, dim)
    if shape[d] != 1:
        raise _state.current().error("err_invalid_access_pattern", f"squeeze_dim({d}) of a size-{shape[d]} dimension")
    _onchip_guard(t, d, "squeeze_dim")
    return _apply(t, shape[:d] + shape[d + 1:], strides[:d] + strides[d + 1:], offset)


def select(t, dim, index):
    if not isinstance(index, (int, np.integer)):
        raise _state.current().error("unsupported_op", "select with a run-time (tensor) index is not simulated; "
                                     "use .ap(..., scalar_offset=...)")
    d = _dim(t, dim)
    _onchip_guard(t, d, "select")
    i = int(index) % t.shape[d]
    return squeeze_dim(slice_(t, d, i, i + 1), d)


def permute(t, dims):
    shape, strides, offset = layout(t)
    order = [_dim(t, d) for d in dims]
    if sorted(order) != list(range(len(shape))):
        raise _state.current().error("err_invalid_access_pattern", f"permute({list(dims)}) of a {len(shape)}-D view")
    if t.alloc.buffer in ONCHIP and order[0] != 0:
        raise _state.current().error("err_invalid_access_pattern",
                                     "permute must keep the partition dimension (dim 0) of an on-chip tensor first")
    return _apply(t, [shape[d] for d in order], [strides[d] for d in order], offset)


def broadcast(t, dim, size):
    shape, strides, offset = layout(t)
    d = _dim(t, dim)
    if shape[d] != 1:
        raise _state.current().error("err_invalid_access_pattern", f"broadcast({d}) of a size-{shape[d]} dimension")
    _onchip_guard(t, d, "broadcast")
    return _apply(t, shape[:d] + (int(size),) + shape[d + 1:], strides[:d] + (0,) + strides[d + 1:], offset)


def expand_dim(t, dim):
    shape, strides, offset = layout(t)
    d = _dim(t, dim, len(shape) + 1)
    _onchip_guard(t, d, "expand_dim")
    stride = strides[d] * shape[d] if d < len(shape) else 1
    return _apply(t, shape[:d] + (1,) + shape[d:], strides[:d] + (stride,) + strides[d:], offset)


def flatten_dims(t, start_dim, end_dim):
    shape, strides, offset = layout(t)
    a, b = _dim(t, start_dim), _dim(t, end_dim)
    if a >= b:
        raise _state.current().error("err_invalid_access_pattern", f"flatten_dims({a}, {b}): start must be below end")
    _onchip_guard(t, a, "flatten_dims")
    if any(strides[i] != shape[i + 1] * strides[i + 1] for i in range(a, b)):
        raise _state.current().error("err_invalid_access_pattern",
                                     f"flatten_dims({a}, {b}): dimensions {a}..{b} are not contiguous in memory")
    merged = int(np.prod(shape[a:b + 1]))
    return _apply(t, shape[:a] + (merged,) + shape[b + 1:], strides[:a] + (strides[b],) + strides[b + 1:], offset)


def reshape_dim(t, dim, shape):
    old, strides, offset = layout(t)
    d = _dim(t, dim)
    parts = [int(s) for s in shape]
    if parts.count(-1) == 1:
        known = int(np.prod([p for p in parts if p != -1]))
        parts[parts.index(-1)] = old[d] // known if known else 0
    if int(np.prod(parts)) != old[d] or any(p <= 0 for p in parts):
        raise _state.current().error("err_invalid_access_pattern", f"reshape_dim({d}, {list(shape)}) of size {old[d]}")
    if len(parts) > 1:
        _onchip_guard(t, d, "reshape_dim")
    inner = [strides[d] * int(np.prod(parts[i + 1:])) for i in range(len(parts))]
    return _apply(t, old[:d] + tuple(parts) + old[d + 1:], strides[:d] + tuple(inner) + strides[d + 1:], offset)


def get_pattern(t):
    shape, strides, _ = layout(t)
    return [[s, n] for s, n in zip(strides, shape)]


def is_contiguous(t) -> bool:
    shape, strides, _ = layout(t)
    expect = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


METHODS = {"slice": slice_, "select": select, "permute": permute, "broadcast": broadcast, "expand_dim": expand_dim,
           "squeeze_dim": squeeze_dim, "flatten_dims": flatten_dims, "reshape_dim": reshape_dim,
           "get_pattern": get_pattern, "is_contiguous": is_contiguous}
PROPERTIES = {"strides": lambda t: layout(t)[1], "offset": lambda t: layout(t)[2]}
