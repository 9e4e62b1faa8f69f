"""GpSimd index instructions: gathers within partitions, segment bounds, nonzero compaction (REFERENCE §3.7).

GpSimd's 8 cores each serve 16 partitions; `local_gather` gathers independently inside each such
group. Out-of-range indices are garbage on hardware and an error here (they never address data).
"""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes
from evidence.nki.dispatch import Call
from evidence.nki.ops.base import Op, free_size, fresh, op_mask, resolve_dtype, set_result, table, tile

PARTITIONS_PER_CORE = 16
_ELEMS_PER_INDEX = (1, 2, 4, 8, 16, 32)


def cost_gather(st, c: Call) -> float:
    return 150 + free_size(c.out.shape)


def _index_values(st, t, op: str) -> np.ndarray:
    return np.zeros(t.shape, np.int64) if st.trace_only else dtypes.cast(t.read(), np.int64)


def _out_of_range(st, op: str, idx: np.ndarray, limit: int) -> None:
    if idx.size and (idx.min() < 0 or idx.max() >= limit):
        raise st.error("err_index_out_of_bound",
                       f"'{op}' index values span [{int(idx.min())}, {int(idx.max())}], outside [0, {limit})")


def check_gather_flattened(st, data, indices, *, mask=None, dtype=None, **_):
    data = tile(st, data, "gather_flattened", "data")
    indices = tile(st, indices, "gather_flattened", "indices")
    c = Call("gather_flattened", "gpsimd")
    c.mask = op_mask(st, mask)
    c.ins = [data, indices]
    c.out = c.result = fresh(st, indices.shape, resolve_dtype(st, dtype, data.dtype))
    return c


def exec_gather_flattened(st, c: Call) -> None:
    data, idx = c.ins[0].read(), c.ins[1].read().astype(np.int64)
    flat = data.reshape(data.shape[0], -1)
    ix = idx.reshape(idx.shape[0], -1) % max(flat.shape[1], 1)  # out of range: unspecified on hardware
    set_result(c.out, np.take_along_axis(flat, ix, axis=1).reshape(idx.shape), c.mask)


def check_n_gather(st, data, indices, *, dtype=None, **_):
    """nki 0.3+ `nc_n_gather`: per-partition gather over the flattened free axes, uint32 indices."""
    data = tile(st, data, "nc_n_gather", "data", ("sbuf",))
    indices = tile(st, indices, "nc_n_gather", "indices", ("sbuf",))
    if indices.shape[0] != data.shape[0]:
        raise st.error("err_num_partition_mismatch", f"'nc_n_gather' data {list(data.shape)} and indices "
                       f"{list(indices.shape)} differ in partitions")
    c = Call("nisa.nc_n_gather", "gpsimd")
    c.ins = [data, indices]
    c.out = c.result = fresh(st, indices.shape, resolve_dtype(st, dtype, data.dtype))
    return c


def exec_n_gather(st, c: Call) -> None:
    data, indices = c.ins
    flat = data.read().reshape(data.shape[0], -1)
    idx = _index_values(st, indices, "nc_n_gather").reshape(indices.shape[0], -1)
    _out_of_range(st, "nc_n_gather", idx, flat.shape[1])
    set_result(c.out, np.take_along_axis(flat, idx, axis=1).reshape(indices.shape))


def check_local_gather(st, src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, *, mask=None, **_):
    src = tile(st, src_buffer, "local_gather", "src_buffer", ("sbuf",))
    idx = tile(st, index, "local_gather", "index", ("sbuf",))
    p = src.shape[0]
    if idx.shape[0] != p or p % PARTITIONS_PER_CORE:
        raise st.error("err_invalid_local_gather_shape", f"'local_gather' needs src_buffer and index on the same "
                       f"multiple of 16 partitions, got {list(src.shape)} and {list(idx.shape)}")
    if dtypes.name(idx.dtype) != "uint16":
        raise st.error("err_unsupported_dtype", f"'local_gather' index must be uint16, got {dtypes.name(idx.dtype)}")
    n_elem = int(num_elem_per_idx)
    if n_elem not in _ELEMS_PER_INDEX:
        raise st.error("err_invalid_local_gather_shape", f"'local_gather' num_elem_per_idx must be one of "
                       f"{list(_ELEMS_PER_INDEX)}, got {n_elem}")
    per_core = free_size(idx.shape) * PARTITIONS_PER_CORE
    n_valid = per_core if num_valid_indices is None else int(num_valid_indices)
    if not 0 < n_valid <= min(per_core, 4096):
        raise st.error("err_invalid_local_gather_shape", f"'local_gather' num_valid_indices {n_valid} must be in "
                       f"1..{min(per_core, 4096)} (indices per GpSimd core)")
    c = Call("nisa.local_gather", "gpsimd")
    c.mask = op_mask(st, mask)
    c.ins = [src, idx]
    c.p.update(n_elem=n_elem, n_valid=n_valid)
    c.out = c.result = fresh(st, (p, n_valid, n_elem), src.dtype)
    return c


def exec_local_gather(st, c: Call) -> None:
    """Per GpSimd core: its 16 partitions' indices flattened partition-first, each an element offset of
    `num_elem_per_idx` contiguous elements, gathered from every partition of the core."""
    src, idx = c.ins
    n_elem, n_valid = c.p["n_elem"], c.p["n_valid"]
    flat = src.read().reshape(src.shape[0], -1)
    offsets = _index_values(st, idx, "local_gather").reshape(idx.shape[0], -1)
    out = np.empty((src.shape[0], n_valid, n_elem), dtype=flat.dtype)
    span = np.arange(n_elem)
    for core in range(0, src.shape[0], PARTITIONS_PER_CORE):
        rows = slice(core, core + PARTITIONS_PER_CORE)
        starts = offsets[rows].flatten(order="F")[:n_valid]
        cols = starts[:, None] + span[None, :]
        _out_of_range(st, "local_gather", cols, flat.shape[1])
        out[rows] = flat[rows][:, cols]
    set_result(c.out, out, c.mask)


def check_sequence_bounds(st, segment_ids, *, dtype=None, **_):
    seg = tile(st, segment_ids, "sequence_bounds", "segment_ids")
    if dtypes.name(seg.dtype) not in ("float32", "int32"):
        raise st.error("err_unsupported_dtype", f"'sequence_bounds' segment_ids must be float32 or int32, got "
                       f"{dtypes.name(seg.dtype)}")
    c = Call("nisa.sequence_bounds", "gpsimd")
    c.ins = [seg]
    c.out = c.result = fresh(st, (seg.shape[0], 2, free_size(seg.shape)), resolve_dtype(st, dtype, seg.dtype))
    return c


def segment_bounds(ids: np.ndarray) -> np.ndarray:
    """[start, end) of each element's run of equal, non-zero segment ids; zero (padding) gets [n, -1]."""
    n = ids.shape[1]
    change = np.ones(ids.shape, bool)
    change[:, 1:] = ids[:, 1:] != ids[:, :-1]
    pos = np.broadcast_to(np.arange(n), ids.shape)
    start = np.maximum.accumulate(np.where(change, pos, 0), axis=1)
    last = np.ones(ids.shape, bool)
    last[:, :-1] = change[:, 1:]
    end = np.minimum.accumulate(np.where(last, pos + 1, n)[:, ::-1], axis=1)[:, ::-1]
    pad = ids == 0
    return np.stack([np.where(pad, n, start), np.where(pad, -1, end)], axis=1)


def exec_sequence_bounds(st, c: Call) -> None:
    seg = c.ins[0]
    ids = seg.read().reshape(seg.shape[0], -1)
    set_result(c.out, segment_bounds(ids).astype(np.float64))


def check_nonzero_with_count(st, src, *, index_offset=0, padding_val=-1, **_):
    src = tile(st, src, "nonzero_with_count", "src", ("sbuf",))
    if st.nc_version < 3:
        raise st.error("err_unsupported_on_target",
                       f"'nonzero_with_count' needs NeuronCore-v3 (trn2); target is {st.target}")
    c = Call("nisa.nonzero_with_count", "gpsimd")
    c.ins = [src]
    c.p.update(offset=int(index_offset), pad=int(padding_val))
    c.out = c.result = fresh(st, (src.shape[0], free_size(src.shape) + 1), dtypes.int32)
    return c


def exec_nonzero_with_count(st, c: Call) -> None:
    """Only partitions 0, 16, ..., 112 (each GpSimd core's first) are computed; the rest stay undefined."""
    src = c.ins[0]
    v = src.read().reshape(src.shape[0], -1)
    out = np.full((v.shape[0], v.shape[1] + 1), c.p["pad"], dtype=np.int64)
    for p in range(0, v.shape[0], PARTITIONS_PER_CORE):
        hits = np.flatnonzero(v[p] != 0)
        out[p, :hits.size] = hits + c.p["offset"]
        out[p, -1] = hits.size
    computed = (np.arange(v.shape[0]) % PARTITIONS_PER_CORE == 0)[:, None]
    set_result(c.out, out, np.broadcast_to(computed, out.shape))


OPS = table(
    Op("gather_flattened", check_gather_flattened, exec_gather_flattened, cost_gather),
    Op("nisa.nc_n_gather", check_n_gather, exec_n_gather, cost_gather),
    Op("nisa.local_gather", check_local_gather, exec_local_gather, cost_gather),
    Op("nisa.sequence_bounds", check_sequence_bounds, exec_sequence_bounds, cost_gather),
    Op("nisa.nonzero_with_count", check_nonzero_with_count, exec_nonzero_with_count, cost_gather),
)
