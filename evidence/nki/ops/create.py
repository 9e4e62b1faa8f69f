"""Tensor creation ops: ndarray/zeros/full/..., constants, memset, iota, random state, printing."""

from __future__ import annotations

import math

import numpy as np

from evidence.nki import dtypes, placement
from evidence.nki.alloc import HBM_KINDS, ONCHIP, Alloc
from evidence.nki.dispatch import Call
from evidence.nki.indexing import IndexExpr
from evidence.nki.ops.base import (
    PSUM_FMAX_BYTES, Op, check_partitions, cost_gpsimd, cost_stream, fresh, op_mask, resolve_dtype,
    set_result, table,
)
from evidence.nki.stamp_boxes import StampBoxes
from evidence.nki.tensor import Tensor


class ParDim(int):
    """nl.par_dim(n): marks the partition dimension in a shape; dims before it are block dims."""

    def __repr__(self) -> str:
        return f"par_dim({int(self)})"


def buffer_name(buffer) -> str:
    if buffer is None:
        return "sbuf"
    name = getattr(buffer, "kind", buffer)
    if name == "hbm":
        return "private_hbm"
    if name not in ONCHIP + HBM_KINDS:
        raise ValueError(f"unknown buffer {buffer!r}")
    return name


_MAX_PLACED_BLOCKS = 4096


def _placed_banks(place, shape: tuple, pdim: int, dt) -> set[int] | None:
    """The PSUM banks a direct allocation puts the tensor's logical blocks in (`Buffer.place` over every block
    index, as the compiler calls it); None without one, or when the placement cannot be read (the tensor then
    counts as the compiler would allocate it)."""
    if place is None:
        return None
    blocks = shape[:pdim]
    if math.prod(blocks) > _MAX_PLACED_BLOCKS:
        return None
    fbytes = dtypes.itemsize(dt) * int(math.prod(shape[pdim + 1:]))
    try:
        banks = {int(place(tuple(int(i) for i in idx), shape[pdim], fbytes)) for idx in np.ndindex(*blocks)}
    except Exception:  # noqa: BLE001 - the kernel's own placement function; its failure is not this estimate's
        return None
    return banks


def _hold_tiles(st, alloc, tiles: int, shape: tuple, pdim: int) -> None:
    """A modulo-allocated SBUF tensor (`ncc.sbuf.mod_alloc(num_free_tiles=...)`) occupies `tiles` physical tiles,
    not one per logical block: the SBUF peak counts those (a pipelined attention whose [128 groups, 128, 2048]
    buffers rotate through 2 tiles read as 8 MiB per partition and a false sbuf_capacity_exceeded)."""
    held = min(alloc.held, tiles * dtypes.itemsize(alloc.dtype) * int(math.prod(shape[pdim + 1:])))
    st.free_onchip("sbuf", alloc.held - held)
    alloc.held = held
    rec = st.recorder
    if rec.keep:
        rec.allocs[alloc.uid] = ("sbuf", held)


def _place(st, alloc, address) -> None:
    """An SBUF tensor created with `address=(partition, byte offset)` counts in the SBUF peak as its byte span
    (`State.place_sbuf`), not as bytes of its own: tensors placed on the same bytes share them."""
    try:
        offset = int(address[1])
    except (TypeError, ValueError, IndexError):
        return
    if offset < 0:
        return
    st.free_onchip("sbuf", alloc.held)
    alloc.placed = (offset, offset + alloc.held)
    st.place_sbuf(alloc.placed)


def _shape(st, shape) -> tuple[tuple[int, ...], int]:
    if isinstance(shape, int):
        shape = (shape,)
    dims, pdim = [], -1
    for i, s in enumerate(shape):
        if pdim < 0 and isinstance(s, ParDim):
            pdim = i  # the first par_dim marks the partition dimension
        dims.append(int(s))
    return tuple(dims), max(pdim, 0)


def _addressed_banks(address, shape: tuple, pdim: int, dt) -> set[int] | None:
    """The PSUM banks a tensor created with `address=(partition, byte offset)` (nki 0.3+ direct allocation, as
    nki-library places its PSUM tiles at `k * 2048`) covers: the 2 KiB banks from its offset through its bytes
    per partition; None without an address or when it cannot be read (the tensor then counts as the compiler
    would allocate it)."""
    try:
        offset = int(address[1])
    except (TypeError, ValueError, IndexError):
        return None
    size = dtypes.itemsize(dt) * int(math.prod(shape[pdim + 1:]))
    if offset < 0 or size <= 0:
        return None
    return set(range(offset // PSUM_FMAX_BYTES, (offset + size - 1) // PSUM_FMAX_BYTES + 1))


def allocate(st, op: str, shape, dt, buffer, name: str = "", init=None, address=None) -> Tensor:
    """Create a tensor after the buffer-specific checks of REFERENCE §1-§2."""
    if isinstance(buffer, str) and st.dialect == "standalone":
        raise st.error("err_invalid_buffer", f"'{op}' buffer={buffer!r}: nki 0.3+ takes buffer objects (nl.sbuf, "
                       "nl.psum, nl.hbm, nl.shared_hbm), not names")
    try:
        buf = buffer_name(buffer)
    except ValueError as exc:
        raise st.error("err_unsupported_memory", str(exc)) from None
    shape, pdim = _shape(st, shape)
    dt = resolve_dtype(st, dt, dtypes.float32)
    if buf in ONCHIP:
        if len(shape) - pdim < 2:
            raise st.error(
                "err_insufficient_rank",
                f"Insufficient rank: on-chip tensor {list(shape)} needs a partition and at least one free dimension",
            )
        check_partitions(st, shape[pdim:], op, name or "tensor")
        if pdim > 0:
            st.finding(
                "block_dimensions_deprecated",
                f"tensor {list(shape)} has block dimensions before par_dim (deprecated from SDK 2.23; the "
                "compiler allocates them per iteration)", "low", once_per_code=True,
            )
        if buf == "psum":
            per_tile = dtypes.itemsize(dt) * int(math.prod(shape[pdim + 1:]))
            # v4 matmuls write up to 4096 fp32 columns: a tile may span the partition's 8 banks
            limit, held = (8 * PSUM_FMAX_BYTES, "8 banks") if st.nc_version >= 4 else (PSUM_FMAX_BYTES, "one bank, 512 fp32")
            if per_tile > limit:
                raise st.error(
                    "err_size_of_dimension_exceed_arch_limit",
                    f"PSUM tile {list(shape)} {dtypes.name(dt)} needs {per_tile} bytes per partition, which "
                    f"exceeds architecture limitation of {limit} bytes ({held})",
                )
        data = None
        if init is not None and not st.trace_only:
            zeros = type(init) in (int, float) and init == 0 and math.copysign(1.0, init) > 0
            if zeros:
                data = st.tiles.zeros(shape, dtypes.storage(dt))  # a tile no one uses any more, zeroed
            else:
                data = np.full(shape, init, dtype=dtypes.storage(dt))
        alloc = Alloc(st, buf, shape, dt, data, pdim, name, uninit=init is None)
        alloc.zeros = data is not None and zeros
        tiles = getattr(buffer, "tiles", None)
        if buf == "sbuf" and tiles is not None and pdim > 0:
            _hold_tiles(st, alloc, tiles, shape, pdim)
        elif buf == "sbuf" and alloc.held:
            _place(st, alloc, address)
        banks = None
        if buf == "psum":
            banks = _placed_banks(getattr(buffer, "place", None), shape, pdim, dt)
            if banks is None:
                banks = _addressed_banks(address, shape, pdim, dt)
        if address is not None:
            placement.place(st, alloc, address, shape, pdim)
        elif getattr(buffer, "locate", None) is not None:
            placement.place_blocks(st, alloc, buffer.locate, shape, pdim)
        pinned = st.pin_banks(banks) if banks is not None else None
        if pinned is not None and alloc.live is not None:
            alloc.live[2] = pinned
        return Tensor.whole(alloc)
    # HBM
    if init is not None:
        raise st.error(
            "err_hbm_tensor_with_init_value_not_supported", f"'{op}' cannot create an initialised {buf} tensor"
        )
    if buf == "shared_hbm":
        if (st.loops or not st.in_kernel_top_level()) and not st.nested_shared_hbm_ok:
            raise st.error(
                "err_shared_hbm_must_in_kernel_level",
                "shared_hbm tensors must be created at the top level of the kernel, not in a loop or helper",
            )
        if st.shared_next < len(st.shared):  # later SPMD instances see the same output tensor
            alloc = st.shared[st.shared_next]
            st.shared_next += 1
            if alloc.shape != shape:
                raise st.error("err_spmd_shape_mismatch", "SPMD instances create different shared_hbm shapes")
            return Tensor.whole(alloc)
    alloc = Alloc(st, buf, shape, dt, None, 0, name)
    # filled (-1: never written) only when a write or read needs its elements (evidence.nki.stamp_boxes)
    alloc.stamp = st.pages.zeros(shape, np.int32, unread=True)
    alloc.stamp_boxes = StampBoxes(alloc.stamp)
    alloc.site = st.where()
    if buf == "shared_hbm":
        st.shared.append(alloc)
        st.shared_next += 1
    return Tensor.whole(alloc)


def _memset_call(st, op, t: Tensor, value) -> Call:
    c = Call(op, "vector" if t.alloc.buffer in ONCHIP and value is not None else None)
    c.out = c.result = t
    if t.alloc.zeros:
        c.p["zero_fill"] = True  # the instruction that made it zeros
    return c


def check_ndarray(st, shape, dtype=None, *, buffer=None, name="", address=None, **_):
    return _memset_call(st, "ndarray", allocate(st, "ndarray", shape, dtype, buffer, name, address=address), None)


def _filled(op: str, value):
    def check(st, shape, dtype=None, *, buffer=None, name="", **_):
        return _memset_call(st, op, allocate(st, op, shape, dtype, buffer, name, init=value), value)
    return check


def check_full(st, shape, fill_value, dtype=None, *, buffer=None, name="", **_):
    return _memset_call(st, "full", allocate(st, "full", shape, dtype, buffer, name, init=fill_value), fill_value)


def _like(op: str, value):
    def check(st, a, dtype=None, *, buffer=None, name="", **_):
        if buffer is None:
            buffer = a.alloc.buffer if isinstance(a, Tensor) else None
        dt = dtype if dtype is not None else a.dtype
        return _memset_call(st, op, allocate(st, op, tuple(a.shape), dt, buffer, name, init=value), value)
    return check


def check_full_like(st, a, fill_value, dtype=None, *, buffer=None, name="", **_):
    return _like("full_like", fill_value)(st, a, dtype, buffer=buffer, name=name)


def check_rand(st, shape, dtype=dtypes.float32, **_):
    t = allocate(st, "rand", shape, dtype, None, init=0)
    c = Call("rand", "gpsimd")
    c.out = c.result = t
    return c


def exec_rand(st, c: Call) -> None:
    c.out.write(st.rng.random(c.out.shape, dtype=np.float32))


def check_random_seed(st, seed, **_):
    c = Call("random_seed", None)
    if isinstance(seed, Tensor):
        seed = 0 if st.trace_only else int(np.asarray(seed.read()).ravel()[0])
    st.rng = np.random.default_rng(int(seed))
    return c


def check_shared_constant(st, constant, dtype=None, **_):
    arr = np.asarray(constant)
    dt = resolve_dtype(st, dtype, dtypes.resolve(arr.dtype))
    alloc = Alloc(st, "shared_hbm", arr.shape, dt, dtypes.cast(arr, dt).copy() if not st.trace_only else None)
    alloc.param = -2  # constant input: not an output, never uninitialised
    c = Call("shared_constant", None)
    c.result = Tensor.whole(alloc)
    return c


def check_identity(st, n, dtype=dtypes.uint8, **_):
    return check_shared_constant(st, np.eye(int(n)), dtype)


def check_memset(st, shape, value, dtype=None, *, mask=None, engine=None, **_):
    shape = tuple(int(s) for s in shape)
    check_partitions(st, shape, "memset", "result")
    dt = resolve_dtype(st, dtype, dtypes.float32)
    c = Call("nisa.memset", "gpsimd" if engine is not None and int(engine) == 3 else "vector")
    c.mask = op_mask(st, mask)
    c.out = c.result = fresh(st, shape, dt)
    c.p["v"] = value
    return c


def exec_memset(st, c: Call) -> None:
    set_result(c.out, np.full(c.out.shape, c.p["v"], dtype=np.float32 if dtypes.is_float(c.out.dtype) else np.int64), c.mask)


def check_iota(st, expr, dtype=dtypes.int32, *, mask=None, **_):
    arr = expr.a if isinstance(expr, IndexExpr) else np.asarray(expr)
    if arr.ndim == 0:
        # a scalar affine expression (`nisa.iota(nl.program_id(1), ...)`, vLLM's paged attention materialising its
        # head id to offset block tables) evaluates to one value: a [1, 1] tile
        arr = arr.reshape(1, 1)
    if arr.ndim < 2:
        raise st.error("err_1d_arange_not_supported", "iota needs a 2-D index expression ([:, None] / [None, :])")
    shape = np.broadcast_shapes(arr.shape)
    check_partitions(st, shape, "iota", "result")
    c = Call("nisa.iota", "gpsimd")
    c.mask = op_mask(st, mask)
    c.out = c.result = fresh(st, shape, resolve_dtype(st, dtype, dtypes.int32))
    c.p["a"] = arr
    return c


def exec_iota(st, c: Call) -> None:
    set_result(c.out, c.p["a"].astype(np.int32), c.mask)


def check_device_print(st, prefix, x=None, *, mask=None, **_):
    c = Call("device_print", None)
    if not st.trace_only:
        v = x.read() if isinstance(x, Tensor) else x
        print(prefix, v if not isinstance(v, np.ndarray) else v.astype(np.float32) if v.dtype.kind == "V" or dtypes.is_float(v.dtype) else v)
    return c


OPS = table(
    Op("ndarray", check_ndarray, None, None),
    Op("zeros", _filled("zeros", 0), None, cost_stream),
    Op("ones", _filled("ones", 1), None, cost_stream),
    Op("full", check_full, None, cost_stream),
    Op("zeros_like", _like("zeros_like", 0), None, cost_stream),
    Op("ones_like", _like("ones_like", 1), None, cost_stream),
    Op("empty_like", _like("empty_like", None), None, None),
    Op("full_like", check_full_like, None, cost_stream),
    Op("rand", check_rand, exec_rand, cost_gpsimd),
    Op("random_seed", check_random_seed, None, None),
    Op("shared_constant", check_shared_constant, None, None),
    Op("shared_identity_matrix", check_identity, None, None),
    Op("nisa.memset", check_memset, exec_memset, cost_stream),
    Op("nisa.iota", check_iota, exec_iota, cost_gpsimd),
    Op("device_print", check_device_print, None, None),
)
