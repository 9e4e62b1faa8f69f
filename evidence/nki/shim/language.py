"""`neuronxcc.nki.language` (nl) as the simulator provides it."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from evidence.nki import dtypes as _dt
from evidence.nki import state as _state
from evidence.nki.indexing import arange, ds, mgrid  # noqa: F401  (re-exported API)
from evidence.nki.loops import loop_iterator
from evidence.nki.ops import OPS as _OPS
from evidence.nki.ops.create import ParDim as par_dim  # noqa: F401
from evidence.nki.shim._common import missing_attribute, op_function

float32, float16, bfloat16, tfloat32 = _dt.float32, _dt.float16, _dt.bfloat16, _dt.tfloat32
float8_e4m3, float8_e5m2 = _dt.float8_e4m3, _dt.float8_e5m2
int8, uint8, int16, uint16, int32, uint32 = _dt.int8, _dt.uint8, _dt.int16, _dt.uint16, _dt.int32, _dt.uint32
bool_ = _dt.bool_

_PSUM_BANK_BYTES = 2048


class _FP32Limits:
    """`nl.fp32.min` is the most negative finite fp32 (0xff7fffff)."""

    min = float(np.finfo(np.float32).min)
    max = float(np.finfo(np.float32).max)
    dtype = _dt.float32


fp32 = _FP32Limits()


def finfo(dtype):
    """Limits of a float dtype (nl.finfo(nl.bfloat16).min ...)."""
    return ml_dtypes.finfo(_dt.storage(_dt.resolve(dtype)))


def iinfo(dtype):
    return np.iinfo(_dt.storage(_dt.resolve(dtype)))


def _linear(shape, idx) -> int:
    """The documented modulo allocators' tile number of block `idx`: `idx mod shape`, linearised row-major
    (an empty `shape` is (1, 1, ...): every block on the one tile)."""
    shape = tuple(int(n) for n in shape) or (1,) * len(idx)
    linear = 0
    for i, n in zip(idx, shape):
        linear = linear * n + i % n
    return linear


class Buffer:
    """A memory kind (`nl.sbuf`, `nl.psum`, `nl.hbm`...); allocation helpers return the same kind. A direct
    allocation (`ncc.sbuf.alloc(func)`, `ncc.sbuf.mod_alloc(...)`, `ncc.psum.alloc(func)`, `mod_alloc(...)`)
    also carries `locate`: (block index, partitions, bytes per partition) -> the (partition, byte address)
    of that block's physical tile, PSUM bytes counted from bank 0 (`bank * 2048 + byte`; evidence.nki.placement);
    PSUM ones `place` too: block index -> the bank, which the PSUM peak counts instead of the compiler's
    allocation (create.allocate)."""

    def __init__(self, kind: str, place=None, tiles: int | None = None, locate=None) -> None:
        self.kind = kind
        self.place = place
        self.tiles = tiles  # SBUF `mod_alloc`: the physical tiles its logical blocks rotate through
        self.locate = locate

    def __repr__(self) -> str:
        return self.kind

    def __eq__(self, other) -> bool:  # `t.buffer == nl.shared_hbm`: tiles report their buffer as a name
        kind = getattr(other, "kind", other)
        return kind == self.kind or {kind, self.kind} == {"hbm", "private_hbm"}

    def __hash__(self) -> int:
        return hash(self.kind)

    def auto_alloc(self, *a, **k):
        return Buffer(self.kind)

    def alloc(self, func=None, *a, **k):
        """`func(idx, pdim_size, fdim_bytes)` gives each logical block's (partition, address) in SBUF, its
        (bank, partition, address) in PSUM."""
        if self.kind not in ("sbuf", "psum") or not callable(func):
            return Buffer(self.kind)
        if self.kind == "sbuf":
            return Buffer(self.kind, locate=lambda idx, parts, fbytes: tuple(func(idx, parts, fbytes))[:2])

        def locate(idx, parts, fbytes):
            bank, partition, byte = func(idx, parts, fbytes)
            return int(partition), int(bank) * _PSUM_BANK_BYTES + int(byte)
        return Buffer(self.kind, lambda idx, parts, fbytes: func(idx, parts, fbytes)[0], locate=locate)

    def mod_alloc(self, *a, base_bank=0, num_bank_tiles=(), num_free_tiles=(), base_addr=None, base_partition=0,
                  num_par_tiles=(), **k):
        """The documented modulo allocation: block `idx` goes to partition `base_partition + linear(idx mod
        num_par_tiles) * pdim_size` and byte `base_addr + linear(idx mod num_free_tiles) * fdim_size`, in PSUM
        within bank `base_bank + linear(idx mod num_bank_tiles)`. SBUF: the tensor holds `num_free_tiles`
        tiles' bytes however many logical blocks it has. Arguments read when the tensor is allocated, where a
        bad one leaves it unplaced (the compiler's error, not the simulator's)."""
        if self.kind not in ("sbuf", "psum"):
            return Buffer(self.kind)

        def spot(idx, parts, fbytes, base):
            return (int(base_partition) + _linear(num_par_tiles, idx) * parts,
                    int(base) + _linear(num_free_tiles, idx) * fbytes)

        if self.kind == "sbuf":
            try:
                tiles = math.prod(int(n) for n in num_free_tiles) if num_free_tiles else 1
            except (TypeError, ValueError):  # read as the compiler would reject it, not here
                tiles = None
            locate = None if base_addr is None else (lambda idx, parts, fbytes: spot(idx, parts, fbytes, base_addr))
            return Buffer(self.kind, tiles=tiles if tiles and tiles > 0 else None, locate=locate)

        def bank(idx, parts, fbytes):  # read when the tensor is allocated, where a bad argument is no error
            return int(base_bank) + _linear(num_bank_tiles, idx)

        def locate(idx, parts, fbytes):
            partition, byte = spot(idx, parts, fbytes, base_addr or 0)
            return partition, bank(idx, parts, fbytes) * _PSUM_BANK_BYTES + byte
        return Buffer(self.kind, bank, locate=locate)

    def view(self, *a, **k):
        return self


sbuf, psum = Buffer("sbuf"), Buffer("psum")
hbm, private_hbm, shared_hbm = Buffer("private_hbm"), Buffer("private_hbm"), Buffer("shared_hbm")


class _TileSize:
    pmax = 128
    psum_fmax = 512
    psum_bank_fmax = 512
    psum_bank_fmax_bytes = 2048
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1
    psum_num_banks = 8

    @property
    def total_available_sbuf_size(self) -> int:
        """Bytes per partition (REFERENCE §2); outside a run (helper modules read it at import), the
        target of the kernel being loaded."""
        st = _state.get()
        return _state.SBUF_USABLE_BYTES[st.target if st else _state.loading_target()]

    # nki 0.4+ names: per-partition and total SBUF
    sbuf_fmax_bytes = total_available_sbuf_size

    @property
    def sbuf_size_bytes(self) -> int:
        return self.total_available_sbuf_size * self.pmax


tile_size = _TileSize()


affine_range = loop_iterator("affine", "affine_range")
sequential_range = loop_iterator("sequential", "sequential_range")
static_range = loop_iterator("static", "static_range")


def program_id(axis: int = 0) -> int:
    st = _state.current()
    return st.program_id[axis] if axis < len(st.program_id) else 0


def num_programs(axes=None) -> int:
    st = _state.current()
    if axes is None:
        return int(np.prod(st.grid)) if st.grid else 1
    if isinstance(axes, (tuple, list)):
        return int(np.prod([st.grid[a] if a < len(st.grid) else 1 for a in axes]))
    return st.grid[axes] if axes < len(st.grid) else 1


def program_ndim() -> int:
    return len(_state.current().grid)


def nc(n: int) -> int:
    return int(n)


def spmd_dim(*dims) -> int:
    return int(np.prod([int(d) for d in dims]))


# every non-ISA, public op in the table becomes an nl function
for _name in _OPS:
    if not _name.startswith("nisa.") and _name not in ("assign", "iadd", "inplace", "reshape", "view", "astype"):
        globals()[_name] = op_function(_name, _name)

__getattr__ = missing_attribute(__name__, "")
