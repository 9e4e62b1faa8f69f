"""Indexing a tile: `t[key]` as a numpy view (basic and affine subscripts, REFERENCE §3.2) or as a
lazy advanced access (arange/mgrid grids, indirect index tiles) kept as (parent, index arrays) until an
instruction reads or writes it together with its mask.

The compiler-style form `t[i, nl.arange(128)[:, None], off + nl.arange(512)[None, :]]` is recognised as
a strided view (`affine_view`, cached per tensor) rather than a gather.

Views are made as `type(t)(...)`, the class of the tile indexed: this module sits below evidence.nki.tensor.
"""

from __future__ import annotations

from operator import add
from typing import TYPE_CHECKING

import numpy as np

from evidence.nki import state as _state
from evidence.nki import indexing, strided, undefined
from evidence.nki.alloc import ONCHIP
from evidence.nki.indexing import IndexExpr, MaskExpr, full_mask

if TYPE_CHECKING:
    from evidence.nki.tensor import Tensor


def clip_masked(idx: tuple, shape: tuple[int, ...], mask, view_shape) -> tuple:
    """Bounds-check advanced indices; masked-out positions may be out of range (never touched)."""
    out = []
    for i, (ix, dim) in enumerate(zip(idx, shape)):
        if isinstance(ix, np.ndarray) and ix.size:
            lo, hi = int(ix.min()), int(ix.max())
            if lo < 0 or hi >= dim:
                if mask is None:
                    raise _state.current().error(
                        "err_tensor_access_out_of_bound",
                        f"index range [{lo}, {hi}] exceed dimension size of {dim} (axis {i}); use a mask",
                    )
                m = full_mask(mask, view_shape)
                full = np.broadcast_to(ix, view_shape)
                bad = ((full < 0) | (full >= dim)) & m
                if bad.any():
                    raise _state.current().error(
                        "err_tensor_access_out_of_bound",
                        f"masked index range still exceeds dimension size of {dim} (axis {i})",
                    )
                ix = np.where(m, full, 0)
        out.append(ix)
    return tuple(out)


def index(t: Tensor, key) -> Tensor:
    """t[key]: numpy-style basic views, or a lazy advanced access (REFERENCE §3.2)."""
    if not isinstance(key, tuple):
        key = (key,)
    v = affine_view(t, key)
    return v if v is not None else index_other(t, key)


def index_other(t: Tensor, key: tuple) -> Tensor:
    """`index` for subscripts the compiler-style fast path (`affine_view`) does not serve."""
    if key and isinstance(key[0], MaskExpr) and all(isinstance(k, MaskExpr) for k in key):
        # operand masking, `nl.matmul(x[i_f < 64], ...)`: the same view, with the elements it may use
        indexing.order_dependent_mask(_state.current(), key[0])
        m = key[0].a
        for k in key[1:]:
            m = m & k.a
        v = type(t)(t.alloc, t.data, t.shape, t.pdim, t.wmask, t.stamp, t.lmask, t.adv)
        v.block = t.block
        v.valid = full_mask(m, t.shape)
        return _keep_dtype(t, v)
    bk = _basic_key(key)
    if bk is None:
        return _keep_dtype(t, index_general(t, key))
    # `lhs[k]`, `rhs[k, :, n * 512:(n + 1) * 512]`: kept like the fast path's views (affine_view)
    v = _kept_view(t, bk)
    if v is None:
        v = _keep_view(t, bk, _keep_dtype(t, index_general(t, key)))
    return v


def _basic_key(key: tuple) -> tuple | None:
    """A hashable form of a subscript of plain integers and integer slices (slices are not hashable before
    Python 3.12), tagged apart from the fast path's keys; None for any other subscript."""
    out = ["basic"]
    for k in key:
        tk = type(k)
        if tk is int:
            out.append(k)
        elif tk is slice:
            start, stop, step = k.start, k.stop, k.step
            if not ((start is None or type(start) is int) and (stop is None or type(stop) is int)
                    and (step is None or type(step) is int)):
                return None
            out.append((start, stop, step))
        elif k is Ellipsis:
            out.append("...")
        else:
            return None
    return tuple(out)


def _dynamic_offset(t: Tensor, k: Tensor, axis: int | None) -> int:
    """The index a one-element index tile holds (0 while only tracing), checked against axis `axis` of `t`: a
    dynamic offset past the end is a run-time fault on hardware (REFERENCE §2), an error here."""
    st = t.alloc.state
    if st.trace_only:
        return 0
    i = int(undefined.index_values(k).reshape(-1)[0])
    if axis is not None and axis < len(t.shape) and not 0 <= i < t.shape[axis]:
        raise st.error("err_tensor_access_out_of_bound",
                       f"dynamic index {i} (a value of {k!r}) exceeds dimension size {t.shape[axis]} (axis {axis})")
    return i


def _keep_dtype(t: Tensor, v: Tensor) -> Tensor:
    """A view cut from a dtype view (`scales.view(nl.float8_e4m3)[...]`) keeps that dtype, not the allocation's."""
    if t.dtype is not t.alloc.dtype:
        v.dtype = t.dtype
    return v


def index_general(t: Tensor, key: tuple) -> Tensor:
    """`index` without the compiler-style fast path (`affine_view`): every kind of subscript."""
    nd = len(t.shape)
    adv = False
    basic = False
    indirect = False  # some index is a tile of run-time values
    comps = []
    forms = []  # the affine forms index expressions carry (strided.plan), None where unknown
    for k in key:
        forms.append(k.form if isinstance(k, IndexExpr) else None)
        if isinstance(k, IndexExpr):
            if not k.lifted and nd > 1:
                raise _state.current().error(
                    "err_1d_arange_not_supported",
                    "a 1-D nl.arange index must be lifted to 2-D with [:, None] or [None, :]",
                )
            adv = True
            comps.append(k.a)
        elif isinstance(k, type(t)) and k.size == 1 and any(isinstance(o, slice) or o is Ellipsis for o in key):
            # one run-time value beside slices (`m_buffer[:, q_idx]`, q_idx an element of a loaded tile, as NxDI's
            # chunked-prefill attention selects its query tile): a dynamic offset that picks one index on that axis
            indirect = True
            comps.append(_dynamic_offset(t, k, None if Ellipsis in comps else len(comps)))
        elif isinstance(k, type(t)):
            adv = indirect = True
            comps.append(undefined.index_values(k) if not t.alloc.state.trace_only else np.zeros(k.shape, np.int64))
        elif isinstance(k, MaskExpr):
            raise _state.current().error(
                "err_unsupported_expression_in_mask", "a mask in a subscript must be the whole subscript: x[mask]"
            )
        elif isinstance(k, (slice, type(Ellipsis))) or k is None:
            basic = True
            comps.append(k)
        elif isinstance(k, np.ndarray) and k.dtype.kind in "iu":
            adv = True
            comps.append(k)
        else:
            comps.append(int(k))
    if adv:
        if basic:
            raise _state.current().error(
                "err_unsupported_mixing_basic_advanced_tensor_indexing",
                f"subscript of {t!r} mixes slices with arange/mgrid indices; use index grids on every axis",
            )
        v = _advanced(t, comps, forms)
        v.indirect = indirect
        if t.pdim < len(key) and t.alloc.buffer in ONCHIP and t.data is t.alloc.data:
            v.pstart = _grid_partition_start(t, key[t.pdim])
        return v
    return _basic(t, tuple(comps))


def affine_view(t: Tensor, key: tuple) -> Tensor | None:
    """The fast path of `index` for compiler-style subscripts (`x[i, k * 128 + nl.arange(128)[:, None], ...]`:
    integers and affine index expressions): the view the general path would make, from a recipe cached
    per subscript structure (strided.recipe); None when the general path must decide."""
    if t.adv is not None or t.data is None:
        return None
    at = _affine_subscript(key, t.shape)
    if at is None:
        return None
    v = _kept_view(t, at)
    if v is None:
        v = _cut_view(t, key, *at)
        if v is not None:
            _keep_view(t, at, _keep_dtype(t, v))
    return v


# Kernels index the same tensor the same way again (each use of `acc[i_p, i_f]`, a weight tile per output
# tile): the views made before are kept on the tensor, valid while its arrays are the same. Views are never
# changed once made (what instructions change is the allocation), so the same one serves.
def _kept_view(t: Tensor, key: tuple) -> Tensor | None:
    views = t.views
    made = None if views is None else views.get(key)
    if made is not None and made[0] is t.data and made[1] is t.wmask:
        return made[2]
    return None


def _keep_view(t: Tensor, key: tuple, v: Tensor) -> Tensor:
    views = t.views
    if views is None or len(views) >= _VIEWS_KEPT:
        views = t.views = {}
    views[key] = (t.data, t.wmask, v)
    return v


def _affine_subscript(key: tuple, dims: tuple[int, ...]) -> tuple | None:
    """(structure, starts) of a subscript of integers and affine index expressions into `dims`: per index
    None (an integer) or the expression's `indexing.Structure`, and its start; None for any other subscript."""
    sig = []
    starts = []
    expr = False
    nd = len(dims)
    i = 0
    for k in key:
        if type(k) is IndexExpr and k.form is not None and (k.lifted or nd <= 1):
            sig.append(k.structure)
            starts.append(k.form[0])
            expr = True
        elif type(k) is int and i < nd and -dims[i] <= k < dims[i]:
            sig.append(None)
            starts.append(k % dims[i])
        else:
            return None
        i += 1
    return (tuple(sig), tuple(starts)) if expr else None


def _cut_view(t: Tensor, key: tuple, sig: tuple, starts: tuple) -> Tensor | None:
    """The view of `t` an affine subscript of structure `sig` addresses from `starts` (`_affine_subscript`),
    cut from its data and bookkeeping arrays; None when the general path must decide."""
    dims = t.shape
    rc = strided.recipe(dims, sig)
    if rc is None:
        return None
    if len(starts) < len(rc.steps):
        starts += (0,) * (len(rc.steps) - len(starts))  # the un-indexed trailing axes start at 0
    if not strided.in_range(rc, starts):
        return None  # out of range: a mask may make it legal (the general path's lazy gather)
    a = strided.cut
    ck = strided.cut_key(rc, starts)
    v = type(t)(t.alloc, a(t.data, rc, starts, ck), rc.shape, 0, None if t.wmask is None else a(t.wmask, rc, starts, ck),
               None if t.stamp is None else a(t.stamp, rc, starts, ck), None if t.lmask is None else a(t.lmask, rc, starts, ck))
    if t.pdim:  # the leading integers on block dimensions (`_block_ints`): their starts
        v.block = t.block + starts[:min(rc.leading_ints, t.pdim)]
    else:
        v.block = t.block
    if rc.extents is not None and t.data is t.alloc.data:
        v.box = (starts, tuple(map(add, starts, rc.extents)))
    v.cut = (rc, t.data, starts)
    if t.pdim < len(key) and t.alloc.buffer in ONCHIP and t.data is t.alloc.data:
        v.pstart = _grid_partition_start(t, key[t.pdim])
    return v


_VIEWS_KEPT = 64  # views kept per tensor (_keep_view)


def _advanced(t: Tensor, comps: list, forms: list | None = None) -> Tensor:
    arrays = [c for c in comps if isinstance(c, np.ndarray)]
    if len(arrays) > 1 and any(a.ndim == 1 for a in arrays) and any(a.ndim > 1 for a in arrays):
        comps = [c[:, None] if isinstance(c, np.ndarray) and c.ndim == 1 else c for c in comps]
    if t.adv is not None:
        raise _state.current().error("err_unsupported_nested_indexing", "index an advanced access again: index the tensor once")
    if len(comps) > len(t.shape):
        raise _state.current().error("err_exceed_max_supported_dimension", f"too many indices for {t!r}")
    for i, c in enumerate(comps):
        if isinstance(c, int) and not -t.shape[i] <= c < t.shape[i]:
            raise _state.current().error(
                "err_tensor_access_out_of_bound", f"index {c} exceed dimension size of {t.shape[i]} (axis {i})"
            )
    rest = tuple(t.shape[len(comps):])
    if rest:  # un-indexed trailing axes become explicit grids, so indices, masks and values share one shape
        nb, r = len(np.broadcast_shapes(*[np.shape(c) for c in comps])), len(rest)
        comps = [c.reshape(c.shape + (1,) * r) if isinstance(c, np.ndarray) else c for c in comps]
        forms = list(forms or [None] * len(comps))
        for i, d in enumerate(rest):
            grid = [1] * (nb + r)
            grid[nb + i] = d
            comps.append(np.arange(d, dtype=np.int64).reshape(grid))
            forms.append((0, ((nb + i, 1),) if d > 1 else ()))
    grid = np.broadcast_shapes(*[np.shape(c) for c in comps])
    shape, kept = strided.tile_shape(grid, len(comps))
    affine = strided.plan(comps, t.shape, grid, forms) if t.data is not None else None
    if affine is not None:  # arange/mgrid expressions address memory at fixed strides: a view, not a gather
        dropped = tuple(i for i in range(len(grid)) if i not in kept)

        def sub(a):
            if a is None:
                return None
            v = strided.view(a, affine, grid)
            return np.squeeze(v, axis=dropped) if dropped else v

        v = type(t)(t.alloc, sub(t.data), tuple(shape), 0, sub(t.wmask), sub(t.stamp), sub(t.lmask))
    else:
        v = type(t)(t.alloc, None, tuple(shape), 0, adv=(t, tuple(comps), grid))
    v.block = t.block + _block_ints(comps, t.shape, t.pdim)
    return v


def _block_ints(key, shape, pdim: int) -> tuple:
    """The leading integer indices on block dimensions (those before the partition dimension)."""
    out = []
    for k, n in zip(key[:pdim], shape):
        if not isinstance(k, int):
            break
        out.append(k % n)
    return tuple(out)


def _partition_start_rule(t: Tensor, k: slice, n: int) -> str | None:
    """REFERENCE §1: 65-128 partitions start at 0; 33-64 at 0/64; 1-32 at 0/32/64/96; no stride.
    The violation's message, kept on the view until a compute engine uses it (not a DMA)."""
    start, stop, step = k.indices(n)
    size = len(range(start, stop, step))
    allowed = (0,) if size > 64 else (0, 64) if size > 32 else (0, 32, 64, 96)
    if step != 1 or start not in allowed:
        t.alloc.state.pstart_views = True
        return (f"access of {size} partitions starting at partition {start}" + (f" with stride {step}" if step != 1 else "")
                + f" of a {t.alloc.buffer} tile: compute-engine operands of {size} partitions must start at {allowed}"
                " and cannot stride")
    return None


class GridStart(str):
    """A partition start violation found on an index-grid subscript (`x[i_p + 48, i_f]`): reported like a
    slice's, except under an instruction or operand mask, which may keep only a legal partition range."""


def _grid_partition_start(t: Tensor, k) -> str | None:
    """The partition start rule (REFERENCE §1) for an affine index expression on the partition axis of an
    on-chip allocation (`i_upper + d_head // 2`, `i_p + 32 * q`): the partitions it addresses as a slice,
    checked like one. None when the expression is not affine, does not rise along the tile's leading axis
    only, or reaches outside the tile (a mask then decides what is accessed)."""
    if type(k) is not IndexExpr or k.form is None:
        return None
    start, steps = k.form
    varying = [(k.shape[g], s, g) for g, s in steps if k.shape[g] > 1]
    if not start and all(s == 1 for _, s, _ in varying):
        return None  # `i_p`: from partition 0, unit stride
    if not varying or any(s <= 0 or g != 0 for _, s, g in varying):
        return None
    vals = np.array([start], dtype=np.int64)
    for n, s, _ in varying:
        vals = (vals[:, None] + s * np.arange(n, dtype=np.int64)).ravel()
    vals = np.unique(vals)
    n = t.shape[t.pdim]
    if vals[0] < 0 or vals[-1] >= n:
        return None
    step = int(vals[1] - vals[0]) if len(vals) > 1 else 1
    if len(vals) > 1 and not (np.diff(vals) == step).all():
        return None
    message = _partition_start_rule(t, slice(int(vals[0]), int(vals[-1]) + 1, step), n)
    return None if message is None else GridStart(message)


def _slices_as_grids(t: Tensor, key: tuple) -> list | None:
    """A beta subscript of slices only, one of them past the tensor's end, as the index grids it stands for
    (`a:b` is `a + arange(b - a)` on its axis): the access is then checked against the instruction's mask when
    it runs, as the compiler checks it (REFERENCE §2: a static out-of-bounds access is fixed with a mask; the
    neuron-team decode attention writes `qk[:, off:off + 512]` past a short context under such a mask). None
    for any other subscript, and in nki 0.3+, which has no masks."""
    if _state.current().dialect != "beta" or not key or not all(isinstance(k, slice) for k in key):
        return None
    grids = []
    for i, (k, n) in enumerate(zip(key, t.shape)):
        start = 0 if k.start is None else k.start
        stop = n if k.stop is None else k.stop
        step = 1 if k.step is None else k.step
        if start < 0 or stop < 0 or step <= 0:
            return None
        shape = [1] * len(key)
        shape[i] = len(range(start, stop, step))
        grids.append(np.arange(start, stop, step, dtype=np.int64).reshape(shape))
    return grids


def _basic(t: Tensor, key: tuple) -> Tensor:
    shape = t.shape
    if t.adv is not None:
        raise _state.current().error("err_unsupported_nested_indexing", "slice an advanced access: index the tensor once")
    # expand the ellipsis so positions line up with axes
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        raise _state.current().error("err_exceed_max_supported_dimension", f"too many indices for {t!r}")
    dropped_before_p = 0
    pstart = t.pstart
    onchip = t.alloc.buffer in ONCHIP
    keep = []
    for i, k in enumerate(key):
        n = shape[i]
        if isinstance(k, int):
            if not -n <= k < n:
                raise _state.current().error(
                    "err_tensor_access_out_of_bound", f"index {k} exceed dimension size of {n} (axis {i})"
                )
            if i < t.pdim:
                dropped_before_p += 1
            elif onchip:
                keep.append(i)  # an integer on a tile's partition/free axis keeps it as a unit axis: x[:, 0] is [P, 1]
        elif isinstance(k, slice):
            start, stop = k.start, k.stop
            last = _last_reached(k)
            if (last is not None and last >= n) or (start is not None and start > n):
                grids = _slices_as_grids(t, key)
                if grids is not None:
                    return _advanced(t, grids)
                raise _state.current().error(
                    "err_tensor_access_out_of_bound",
                    f"index range [{start or 0}, {stop if last is None else last}] exceed dimension size of {n} "
                    f"(axis {i})",
                )
            if i == t.pdim and t.alloc.buffer in ONCHIP and t.data is t.alloc.data and (start or k.step not in (None, 1)):
                pstart = _partition_start_rule(t, k, n)
    if keep:
        key = tuple(slice(k % shape[i], k % shape[i] + 1) if i in keep else k for i, k in enumerate(key))
    key = key + (Ellipsis,)  # all-integer keys still give (0-d) views, not scalars
    data = t.data[key]
    pd = max(t.pdim - dropped_before_p, 0)
    v = type(t)(
        t.alloc, data, data.shape, pd,
        None if t.wmask is None else t.wmask[key],
        None if t.stamp is None else t.stamp[key],
        None if t.lmask is None else t.lmask[key],
    )
    v.block = t.block + _block_ints(key, shape, t.pdim) if t.pdim else t.block
    v.pstart = pstart
    if t.data is t.alloc.data and data.size:
        v.box = _basic_box(key, shape)
    return v


def _last_reached(k: slice) -> int | None:
    """The last index a slice with a stop reaches (`a:b:s` reaches a + (count - 1) * s, not b - 1 when s > 1),
    None for an open slice. A strided slice's stop may run past the axis end while every element it
    takes is inside (conv windows `blk[:, off:off + w * stride:stride]`): that is no out-of-bounds access."""
    if k.stop is None:
        return None
    start, step = k.start or 0, 1 if k.step is None else k.step
    count = len(range(start, k.stop, step)) if start >= 0 and k.stop >= 0 and step > 1 else 0
    return start + (count - 1) * step if count else k.stop - 1  # unit steps (and the rest): b - 1, as before


def _basic_box(key: tuple, shape: tuple[int, ...]) -> tuple | None:
    """The box of the allocation (of `shape`) a basic subscript (integers, slices) addresses, or None
    when it is not one box (strided or reversed slices, new axes)."""
    lo, hi = [], []
    for k, n in zip(key, shape):
        if type(k) is int:
            lo.append(k % n)
            hi.append(k % n + 1)
        elif type(k) is slice:
            start, stop, step = k.indices(n)
            if step != 1 or stop <= start:
                return None
            lo.append(start)
            hi.append(stop)
        elif k is Ellipsis:
            break
        else:
            return None
    rest = shape[len(lo):]
    return tuple(lo) + (0,) * len(rest), tuple(hi) + tuple(rest)
