"""`nki.isa` (nisa) of the standalone nki 0.3+ dialect: every instruction takes its destination first.

`nisa.tensor_tensor(dst, data1, data2, op)` runs the same op-table entry as the beta
`dst = nisa.tensor_tensor(data1, data2, op)`, with the result written into `dst` (its dtype is the
output dtype) and nothing returned (`dispatch.call(..., into=dst)`). The table below maps each
instruction's 0.3+ parameters onto the shared op; the few whose semantics changed (`iota` and
`affine_select` take access patterns, `memset` fills `dst`, `dma_copy` cannot read PSUM,
`nc_matmul` accumulates into `dst`) have their own adapter. Enum parameters take enum members only
(0.3 rejects raw integers); `mask=` and `dtype=` no longer exist.
"""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from evidence.nki import dispatch
from evidence.nki import registers as _registers
from evidence.nki.registers import VirtualRegister, register_alloc, register_move  # noqa: F401  (nisa API)
from evidence.nki import dtypes as _dt
from evidence.nki import state as _state
from evidence.nki.indexing import MaskExpr
from evidence.nki.ops.functions import BINARY, op_name
from evidence.nki.shim._common import reject_removed
from evidence.nki.shim.isa import dge_mode, oob_mode, reduce_cmd  # noqa: F401  (the same enums in both dialects)


class engine(IntEnum):
    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6


unknown_engine, tensor_engine, scalar_engine = engine.unknown, engine.tensor, engine.scalar
gpsimd_engine, vector_engine = engine.gpsimd, engine.vector


class matmul_perf_mode(IntEnum):
    none = 0
    double_row = 1


class nc_version(IntEnum):
    gen2 = 2
    gen3 = 3
    gen4 = 4


class dma_engine(IntEnum):
    dma = 0
    gpsimd_dma = 1


class NkiValidationError(Exception):
    """Raised when hardware constraints are violated (the simulator raises SimulationError)."""


def get_nc_version() -> nc_version:
    return nc_version(_state.current().nc_version)


_ENUMS = {"engine", "dge_mode", "oob_mode", "reduce_cmd", "perf_mode", "dma_engine"}
REMOVED = {
    "mask": "masks were removed in nki 0.2; use slices or .ap() access patterns",
    "dtype": "the output dtype is dst's dtype in nki 0.2+",
    "dst_rmw_op": "read-modify-write DMA moved to nisa.dma_compute in nki 0.3",
    "unique_indices": "moved to nisa.dma_compute in nki 0.3",
}


def _bind(public: str, params: tuple[str, ...], args: tuple, kwargs: dict) -> dict:
    if len(args) > len(params):
        raise _state.current().error("err_invalid_arguments",
                                     f"'nisa.{public}' takes {len(params) + 1} positional arguments (dst first)")
    reject_removed(f"nisa.{public}", {k: v for k, v in kwargs.items() if k not in params}, REMOVED)
    bound = dict(zip(params, args))
    for k, v in kwargs.items():
        if k in bound:
            raise _state.current().error("err_invalid_arguments", f"'nisa.{public}' got '{k}' twice")
        bound[k] = v
    bound.pop("name", None)
    for k in _ENUMS & bound.keys():
        v = bound[k]
        # nki-library itself passes dge_mode as a raw integer (a compiler workaround), so that one is not an error
        if k == "dge_mode" and type(v) is int and v in {int(m) for m in dge_mode}:
            continue
        if v is not None and not isinstance(v, IntEnum):
            raise _state.current().error(
                "err_invalid_enum", f"'nisa.{public}' {k}={v!r}: nki 0.3+ takes enum members (nisa.{k}.<name>), "
                "not raw integers")
    return bound


def _into(public: str, op: str, params: tuple[str, ...], dtyped: bool = True, rename: dict | None = None):
    """`nisa.<public>(dst, *params)`: op-table entry `op`, its fresh result written into dst."""

    def shim(dst=None, *args, **kwargs):
        bound = _bind(public, params, args, kwargs)
        if dst is None and op not in _state.current().ops:  # an API with no op: say so, not "needs dst"
            dispatch.call(op, (), bound)
        if dst is None:
            raise _state.current().error("err_invalid_arguments", f"'nisa.{public}' needs dst (its first argument)")
        for new, old in (rename or {}).items():
            if new in bound:
                bound[old] = bound.pop(new)
        if dtyped and getattr(dst, "dtype", None) is not None:
            bound["dtype"] = dst.dtype
        dispatch.call(op, (), bound, into=dst)

    shim.__name__ = shim.__qualname__ = public
    shim._nki_op = public
    return shim


def _direct(public: str, op: str, params: tuple[str, ...]):
    """Instructions whose op already writes an existing `dst` (copies with predicates, shuffles)."""

    def shim(dst=None, *args, **kwargs):
        bound = _bind(public, params, args, kwargs)
        dispatch.call(op, (), {"dst": dst, **bound})

    shim.__name__ = shim.__qualname__ = public
    shim._nki_op = public
    return shim


_SIGNATURES = {
    # public name: (op-table entry, parameters after dst, output dtype from dst)
    "tensor_copy": ("nisa.tensor_copy", ("src", "engine"), True),
    "tensor_tensor": ("nisa.tensor_tensor", ("data1", "data2", "op", "engine"), True),
    "tensor_scalar": ("nisa.tensor_scalar", ("data", "op0", "operand0", "reverse0", "op1", "operand1", "reverse1",
                                             "engine"), True),
    "tensor_reduce": ("nisa.tensor_reduce", ("op", "data", "axis", "negate", "keepdims"), True),
    "tensor_partition_reduce": ("nisa.tensor_partition_reduce", ("op", "data"), True),
    "activation": ("nisa.activation", ("op", "data", "bias", "scale", "reduce_op", "reduce_res", "reduce_cmd"), True),
    "activation_reduce": ("nisa.activation_reduce", ("op", "data", "reduce_op", "reduce_res", "bias", "scale"), True),
    "tensor_tensor_scan": ("nisa.tensor_tensor_scan", ("data0", "data1", "initial", "op0", "op1", "reverse0",
                                                       "reverse1"), True),
    "scalar_tensor_tensor": ("nisa.scalar_tensor_tensor", ("data", "op0", "operand0", "op1", "operand1", "reverse0",
                                                           "reverse1"), True),
    "tensor_scalar_reduce": ("nisa.tensor_scalar_reduce", ("data", "op0", "operand0", "reduce_op", "reduce_res",
                                                           "reverse0", "reduce_cmd", "reduce_init"), True),
    "nc_transpose": ("nisa.nc_transpose", ("data", "engine"), True),
    "dma_transpose": ("nisa.dma_transpose", ("src", "axes", "priority", "dge_mode", "oob_mode"), True),
    "reciprocal": ("nisa.reciprocal", ("data",), True),
    "bn_stats": ("nisa.bn_stats", ("data",), True),
    "bn_aggr": ("nisa.bn_aggr", ("data",), True),
    "max8": ("nisa.max8", ("src",), True),
    "nc_find_index8": ("nisa.nc_find_index8", ("data", "vals"), True),
    "nc_match_replace8": ("nisa.nc_match_replace8", ("data", "vals", "imm", "dst_idx"), True),
    "dropout": ("nisa.dropout", ("data", "prob"), True),
    "local_gather": ("nisa.local_gather", ("src_buffer", "index", "num_elem_per_idx", "num_valid_indices"), False),
    "nc_n_gather": ("nisa.nc_n_gather", ("data", "indices"), True),
    "sequence_bounds": ("nisa.sequence_bounds", ("segment_ids",), True),
    "nonzero_with_count": ("nisa.nonzero_with_count", ("src", "index_offset", "padding_val"), False),
    "range_select": ("nisa.range_select", ("on_true_tile", "comp_op0", "comp_op1", "bound0", "bound1", "reduce_cmd",
                                           "reduce_res", "reduce_op", "range_start", "on_false_value"), True),
    "select_reduce": ("nisa.select_reduce", ("predicate", "on_true", "on_false", "reduce_res", "reduce_cmd",
                                             "reduce_op", "reverse_pred"), True),
    "tensor_copy_dynamic_src": ("nisa.tensor_copy_dynamic_src", ("src", "engine"), True),
}
for _public, (_op, _params, _dtyped) in _SIGNATURES.items():
    globals()[_public] = _into(_public, _op, _params, _dtyped)

tensor_copy_predicated = _direct("tensor_copy_predicated", "nisa.tensor_copy_predicated",
                                 ("src", "predicate", "reverse_pred"))
nc_stream_shuffle = _direct("nc_stream_shuffle", "nisa.nc_stream_shuffle", ("src", "shuffle_mask"))
tensor_copy_dynamic_dst = _direct("tensor_copy_dynamic_dst", "nisa.tensor_copy_dynamic_dst", ("src", "engine"))
dma_compute = _direct("dma_compute", "nisa.dma_compute", ("srcs", "reduce_op", "scales", "unique_indices", "oob_mode"))


def register_load(dst, src):
    """Load a one-element tile's value into a register (nisa.register_alloc())."""
    dispatch.call("nisa.register_load", (), {"dst": dst, "src": src})


def register_store(dst, src):
    """Store a register's value into a one-element tile."""
    memset(dst, int(_registers.VirtualRegister(src)) if isinstance(src, _registers.VirtualRegister) else src)


def core_barrier(data, cores, engine=None, name=None):
    """A barrier between the two cores of a logical core (no destination, nothing returned)."""
    dispatch.call("nisa.core_barrier", (), {"data": data, "cores": cores, "engine": engine, "name": name})


def dma_copy(dst=None, src=None, *args, **kwargs):
    """HBM/SBUF to HBM/SBUF; 0.3+ reads no PSUM, and hardware DGE moves raw bytes (no dtype cast)."""
    bound = _bind("dma_copy", ("priority", "oob_mode", "dge_mode", "engine"), args, kwargs)
    st = _state.current()
    if getattr(src, "buffer", None) == "psum":
        raise st.error("err_unsupported_memory", "nisa.dma_copy cannot read PSUM in nki 0.3+; copy the tile to SBUF "
                       "with nisa.tensor_copy first")
    mode = bound.get("dge_mode")
    if mode is not None and int(mode) == dge_mode.hwdge and getattr(src, "dtype", None) is not None \
            and _dt.name(src.dtype) != _dt.name(getattr(dst, "dtype", src.dtype)):
        raise st.error("err_dtype_mismatch", f"nisa.dma_copy with dge_mode.hwdge moves raw bytes: src is "
                       f"{_dt.name(src.dtype)} but dst is {_dt.name(dst.dtype)}; use .view() or another dge_mode")
    dispatch.call("nisa.dma_copy", (), {"dst": dst, "src": src, **bound})


def memset(dst=None, value=0, *args, **kwargs):
    """Fill dst with a constant of dst's dtype. A float with a fractional part cannot fill an integer dst;
    an integral one (`value=0.0` into a uint16 index tile, as nki-library's MoE decode path writes) fills it
    with that integer."""
    bound = _bind("memset", ("engine",), args, kwargs)
    st = _state.current()
    dt = dst.dtype
    if isinstance(dt, _dt.Packed) and value != 0:
        raise st.error("err_invalid_value", f"nisa.memset of x4-packed {_dt.name(dt)} supports value=0 only")
    if _dt.is_int(dt) and isinstance(value, float) and not float(value).is_integer():
        raise st.error("err_dtype_mismatch", f"nisa.memset value {value!r} does not match the {_dt.name(dt)} dst")
    if _dt.is_int(dt) and isinstance(value, float):
        value = int(value)
    dispatch.call("nisa.memset", (tuple(dst.shape), value, dt), {"engine": bound.get("engine")}, into=dst)


def _pattern_values(dst, pattern, offset: int, channel_multiplier: int) -> np.ndarray:
    """offset + partition * channel_multiplier + sum(step * i) over a [[step, num], ...] pattern,
    shaped [partitions, elements per partition] in row-major pattern order."""
    free = np.zeros((1, 1), dtype=np.int64)
    for step, num in pattern:
        free = (free[..., None] + int(step) * np.arange(int(num), dtype=np.int64)).reshape(1, -1)
    parts = np.arange(dst.shape[0], dtype=np.int64)[:, None] * int(channel_multiplier)
    values = int(offset) + parts + free
    per_partition = dst.size // max(dst.shape[0], 1)
    if values.shape[1] != per_partition:
        raise _state.current().error("err_shape_mismatch", f"pattern {pattern} generates {values.shape[1]} elements "
                                     f"per partition; dst {list(dst.shape)} holds {per_partition}")
    return values


def iota(dst=None, pattern=None, offset=0, channel_multiplier=0, name=None):
    """Integer pattern values (0.3+: an access pattern, not an index expression) cast to dst's dtype."""
    values = _pattern_values(dst, pattern, offset, channel_multiplier)
    dispatch.call("nisa.iota", (values.reshape(dst.shape),), {"dtype": dst.dtype}, into=dst)


def affine_select(dst=None, pattern=None, channel_multiplier=0, on_true_tile=None, on_false_value=0.0,
                  cmp_op=None, offset=0, name=None):
    """dst = on_true where cmp_op(affine pattern value, 0), else on_false_value."""
    values = _pattern_values(dst, pattern, offset, channel_multiplier).reshape(dst.shape)
    fn = BINARY[op_name(cmp_op) if cmp_op is not None else "equal"]
    pred = MaskExpr(fn(values, 0))
    dispatch.call("nisa.affine_select", (pred, on_true_tile, on_false_value), {"dtype": dst.dtype}, into=dst)


def nc_matmul(dst=None, stationary=None, moving=None, *args, **kwargs):
    """dst (PSUM) = stationary.T @ moving; `accumulate` None: the first matmul into a location
    overwrites it, later ones add (REFERENCE §3.5)."""
    bound = _bind("nc_matmul", ("is_stationary_onezero", "is_moving_onezero", "is_transpose", "accumulate",
                                "tile_position", "tile_size", "perf_mode"), args, kwargs)
    accumulate = bound.pop("accumulate", None)
    dt = getattr(dst, "dtype", None)
    st = _state.current()
    if dt is not None and _dt.name(dt) != "float32" and st.nc_version < 4:
        raise st.error("err_unsupported_dtype", f"nc_matmul dst must be float32 on {st.target}, got {_dt.name(dt)}")
    mode = bound.get("perf_mode")
    if mode is not None and int(mode) == matmul_perf_mode.double_row:
        bound["perf_mode"] = "double_row"
    elif mode is not None:
        bound.pop("perf_mode")
    dispatch.call("nisa.nc_matmul", (stationary, moving), {**bound, "accumulate": accumulate}, into=dst)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module 'nki.isa' has no attribute {name!r}")
    if name == "constants":  # the submodule `nki.isa.constants` (imported late: it re-exports this module's enums)
        from evidence.nki.shim.standalone import isa_constants

        return isa_constants
    return _into(name, "nisa." + name, ())
