"""`nki.language` (nl) of the standalone nki 0.3+ dialect.

The same ops as the beta `neuronxcc.nki.language` (0.3 brought `nl.load`, `nl.store`, `nl.copy`,
`nl.matmul`, ... back as conveniences over `nki.isa`), without what 0.2 removed: `mask=` (use
slices or `.ap()`), `nl.arange`/`nl.mgrid`, `par_dim` and block dimensions. The range iterators
are deprecated aliases of Python `range`: they run in order and carry no affine-loop semantics.
"""

from __future__ import annotations

import dataclasses

from evidence.nki import dtypes as _dt
from evidence.nki import state as _state
from evidence.nki.indexing import ds  # noqa: F401  (re-exported API)
from evidence.nki.loops import loop_iterator
from evidence.nki.registers import dynamic_range, fori_loop  # noqa: F401  (nl API, nki 0.6)
from evidence.nki.ops import OPS as _OPS
from evidence.nki.shim._common import op_function
from evidence.nki.shim.language import (  # noqa: F401  (the same objects as the beta dialect's)
    Buffer, finfo, fp32, iinfo, num_programs, program_id, program_ndim, tile_size,
)

float32, float16, bfloat16, tfloat32 = _dt.float32, _dt.float16, _dt.bfloat16, _dt.tfloat32
float8_e4m3, float8_e5m2, float8_e4m3fn, float8_e8m0fnu = (
    _dt.float8_e4m3, _dt.float8_e5m2, _dt.float8_e4m3fn, _dt.float8_e8m0fnu)
float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4 = _dt.float8_e5m2_x4, _dt.float8_e4m3fn_x4, _dt.float4_e2m1fn_x4
int8, uint8, int16, uint16, int32, uint32 = _dt.int8, _dt.uint8, _dt.int16, _dt.uint16, _dt.int32, _dt.uint32
bool_ = _dt.bool_

sbuf, psum = Buffer("sbuf"), Buffer("psum")
hbm, private_hbm, shared_hbm = Buffer("private_hbm"), Buffer("private_hbm"), Buffer("shared_hbm")


class _NKIObjectType(type):
    """Keyword arguments that name a class attribute set it on the instance, also where the class's
    `@dataclass` has no such field: nki-library builds `@dataclass` NKIObjects whose attributes carry no
    annotation (`section_idx = None`) with `SectionParams(section_idx=0, ...)`, which the NKI compiler
    accepts and CPython's generated `__init__` would refuse. Other keywords reach `__init__` unchanged.

    A generated `__init__` called without a field that has no default leaves that field unset instead of
    refusing the call: nki-library's decode MLP builds its dimension record without one of the fields the
    class declares, which the NKI compiler accepts; reading the field is then the kernel's own error where it
    reads it. Neither rule is documented (a question for REFERENCE)."""

    def __call__(cls, *args, **kwargs):
        extra, unset = {}, []
        if dataclasses.is_dataclass(cls) or cls.__init__ is object.__init__:
            fields = [f for f in dataclasses.fields(cls) if f.init] if dataclasses.is_dataclass(cls) else []
            names = {f.name for f in fields}
            extra = {k: kwargs.pop(k) for k in list(kwargs) if k not in names and hasattr(cls, k)}
            if _generated_init(cls):
                unset = [f.name for f in fields[len(args):] if f.name not in kwargs and _required(f)]
                kwargs.update((name, _UNSET) for name in unset)
        obj = super().__call__(*args, **kwargs)
        for name in unset:
            if getattr(obj, name, None) is _UNSET:
                delattr(obj, name)
        for key, value in extra.items():
            setattr(obj, key, value)
        return obj


_UNSET = object()  # stands in for a field the constructor call left out, removed once the object exists


def _generated_init(cls) -> bool:
    """The class's `__init__` is the one `@dataclass` wrote (not the class's own)."""
    code = getattr(cls.__init__, "__code__", None)
    return code is not None and code.co_filename == "<string>" and cls.__init__.__qualname__.endswith("__init__")


def _required(field) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


class NKIObject(metaclass=_NKIObjectType):
    """Base of classes kernels pass around (configs, helpers); plain Python in simulation."""


REMOVED = {
    "mask": "masks were removed in nki 0.2; use slices (min(n, start + size)) or .ap() access patterns",
}
_GONE = {
    "arange": "nl.arange was removed in nki 0.2; index with slices or .ap() access patterns",
    "mgrid": "nl.mgrid was removed in nki 0.2; index with slices or .ap() access patterns",
    "par_dim": "block dimensions (nl.par_dim) were removed in nki 0.2; keep the partition axis first",
    "loop_reduce": "nl.loop_reduce is a beta (neuronxcc.nki) API",
}


# deprecated aliases of Python range in nki 0.3+: in order, no affine-loop semantics
affine_range = loop_iterator("sequential", "affine_range")
sequential_range = loop_iterator("sequential", "sequential_range")
static_range = loop_iterator("sequential", "static_range")

for _name in _OPS:
    if not _name.startswith("nisa.") and _name not in ("assign", "iadd", "inplace", "reshape", "view", "astype",
                                                        *_GONE):
        globals()[_name] = op_function(_name, _name, REMOVED)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module 'nki.language' has no attribute {name!r}")
    if name in _GONE:
        raise _state.current().error("err_removed_api", _GONE[name]) if _state.get() else AttributeError(_GONE[name])
    return op_function(name, name, REMOVED)
