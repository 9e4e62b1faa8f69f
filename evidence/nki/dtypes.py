"""NKI dtypes, their numpy storage, rounding casts and the promotion table (REFERENCE §3.8, §4).

Low precision is stored with ml_dtypes (round-to-nearest-even on every cast). tfloat32 has no
numpy type: it is stored as float32 whose mantissa is rounded to 10 bits (RNE).
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np


class _TF32:
    """Marker dtype for tfloat32 (1S 8E 10M), stored as float32."""

    name = "tfloat32"
    itemsize = 4
    kind = "f"

    def __repr__(self) -> str:
        return "tfloat32"


class Packed:
    """Marker dtype for the nki 0.3+ x4-packed MX formats (four 8- or 4-bit values in 32 bits, for
    TensorE's nc_matmul_mx on NeuronCore-v4): stored as their raw uint32 words; only copies and zero
    fills are simulated."""

    itemsize = 4
    kind = "V"

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)  # IEEE-style ("cFP8"), not the OCP `fn` variant
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
tfloat32 = _TF32()
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)  # OCP fp8 (nki 0.3+, NeuronCore-v4)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)  # MX block scale
float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4 = (Packed(n) for n in (
    "float8_e5m2_x4", "float8_e4m3fn_x4", "float4_e2m1fn_x4"))
PACKED = {p.name: p for p in (float8_e5m2_x4, float8_e4m3fn_x4, float4_e2m1fn_x4)}
int8, uint8 = np.dtype(np.int8), np.dtype(np.uint8)
int16, uint16 = np.dtype(np.int16), np.dtype(np.uint16)
int32, uint32 = np.dtype(np.int32), np.dtype(np.uint32)
bool_ = np.dtype(np.bool_)

BY_NAME = {
    "float32": float32, "fp32": float32, "float16": float16, "fp16": float16, "bfloat16": bfloat16,
    "bf16": bfloat16, "float8_e4m3": float8_e4m3, "float8_e5m2": float8_e5m2, "tfloat32": tfloat32,
    "int8": int8, "uint8": uint8, "int16": int16, "uint16": uint16, "int32": int32, "uint32": uint32,
    "bool": bool_, "bool_": bool_, "float8_e4m3fn": float8_e4m3fn, "float8_e8m0fnu": float8_e8m0fnu, **PACKED,
}
_FLOAT_RANK = {float8_e4m3: 0, float8_e5m2: 0, bfloat16: 1, float16: 1, tfloat32: 2, float32: 3}
INT_SENTINEL = 4  # what uninitialised integer memory holds (the 2026 simulator uses 4, REFERENCE §8.2)


def _per_dtype(fn):
    """Memoise a property of a dtype: asked per operand of every instruction on the hot path, where
    np.dtype(...) costs microseconds."""
    memo: dict = {}

    @functools.wraps(fn)
    def cached(dt: object):
        try:
            return memo[dt]
        except (KeyError, TypeError):
            r = fn(dt)
            if len(memo) < 256:
                try:
                    memo[dt] = r
                except TypeError:  # unhashable
                    pass
            return r

    return cached


@_per_dtype
def resolve(dt: object) -> np.dtype | _TF32:
    """Normalise a user-given dtype (nl.bfloat16, np.float32, 'bfloat16', ...) to ours."""
    if dt is None:
        raise ValueError("dtype is None")
    if dt is tfloat32 or isinstance(dt, _TF32):
        return tfloat32
    if isinstance(dt, Packed):
        return PACKED[dt.name]
    if isinstance(dt, str):
        if dt not in BY_NAME:
            raise ValueError(f"unknown dtype {dt!r}")
        return BY_NAME[dt]
    d = np.dtype(dt)
    if d == np.float64:
        return float32  # NKI has no fp64; numpy defaults are narrowed the way the compiler would
    if d == np.int64:
        return int32
    if d == np.uint64:
        return uint32
    return d


def storage(dt: np.dtype | _TF32) -> np.dtype:
    if dt is tfloat32:
        return float32
    return uint32 if isinstance(dt, Packed) else dt


@_per_dtype
def name(dt: object) -> str:
    return dt.name if isinstance(dt, (_TF32, Packed)) else np.dtype(dt).name


def is_float(dt: object) -> bool:
    if isinstance(dt, Packed):
        return False
    return dt is tfloat32 or dt in _FLOAT_RANK or np.dtype(dt).kind == "f"


@_per_dtype
def is_int(dt: object) -> bool:
    return dt is not tfloat32 and not isinstance(dt, Packed) and np.dtype(dt).kind in "iu"


@_per_dtype
def itemsize(dt: object) -> int:
    return 4 if dt is tfloat32 or isinstance(dt, Packed) else np.dtype(dt).itemsize


def round_tf32(a: np.ndarray) -> np.ndarray:
    """Round float32 values to a 10-bit mantissa with round-to-nearest-even."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    lsb = (bits >> 13) & 1
    rounded = (bits + np.uint32(0xFFF) + lsb) & np.uint32(0xFFFFE000)
    finite = np.isfinite(a)
    return np.where(finite, rounded.view(np.float32), a).astype(np.float32)


def cast(a: np.ndarray, dt: object) -> np.ndarray:
    """Cast to a storage dtype with RNE; float to int rounds to nearest (even) and saturates."""
    if dt is tfloat32:
        return round_tf32(np.asarray(a, dtype=np.float32))
    d = storage(dt) if isinstance(dt, Packed) else np.dtype(dt)
    a = np.asarray(a)
    if a.dtype == d:
        return a
    if d.kind in "iu" and a.dtype.kind == "f":
        info = np.iinfo(d)
        # clipped in float64: the bounds of 32-bit integers are not fp32 numbers (2**31 - 1 rounds up to 2**31,
        # which the integer cast then wraps to INT32_MIN, and uint32's bound to 0)
        a = np.clip(np.rint(np.asarray(a, np.float32)).astype(np.float64), info.min, info.max)
    return a.astype(d)


def to_f32(a: np.ndarray) -> np.ndarray:
    """Engine arithmetic happens in fp32 (REFERENCE §4); no copy when already fp32."""
    return a if a.dtype == float32 else a.astype(np.float32)


def fill_uninitialised(shape: tuple[int, ...], dt: object, empty=np.empty) -> np.ndarray:
    """Storage of `dt` holding the never-written pattern (NaN, INT_SENTINEL, False); `empty(shape, dtype)`
    allocates it."""
    d = storage(dt)
    data = empty(shape, d)
    data[...] = INT_SENTINEL if d.kind in "iu" else (False if d.kind == "b" else np.nan)
    return data


def _weak(value: object) -> object:
    """Python scalars are weakly typed: bool->uint8, int->int32, float->fp32."""
    if isinstance(value, bool):
        return uint8
    if isinstance(value, int):
        return int32
    if isinstance(value, float):
        return float32
    if isinstance(value, np.generic):
        return resolve(value.dtype)
    return value


def _promote_ints(a: np.dtype, b: np.dtype) -> np.dtype | _TF32:
    if a == b:
        return a
    if a.kind == b.kind:
        return a if a.itemsize >= b.itemsize else b
    signed, unsigned = (a, b) if a.kind == "i" else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    if unsigned.itemsize >= 4:
        return float32  # (int32, uint32) -> fp32: hardware has no int64
    return {1: int16, 2: int32}[unsigned.itemsize]


def promote(a: object, b: object) -> np.dtype | _TF32:
    """Result dtype of an arithmetic op on dtypes or Python scalars (REFERENCE §3.8)."""
    a, b = _weak(a), _weak(b)
    if a == bool_:
        a = uint8
    if b == bool_:
        b = uint8
    if a is b or a == b:
        return a
    fa, fb = is_float(a), is_float(b)
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if not fa:
        return _promote_ints(np.dtype(a), np.dtype(b))
    pair = {a, b} if not (a is tfloat32 or b is tfloat32) else None
    if pair == {float16, bfloat16}:
        return float32
    if pair == {float8_e4m3, float8_e5m2}:
        return bfloat16
    if pair is not None and pair <= {float8_e4m3, float8_e5m2} | {float16, bfloat16}:
        return a if _FLOAT_RANK[a] > _FLOAT_RANK[b] else b
    return a if _FLOAT_RANK.get(a, 3) >= _FLOAT_RANK.get(b, 3) else b


# Names benchmark claims and notes write for dtypes (claims files: `dtype = "bf16"`); `fp8` is the IEEE-style
# e4m3 NKI calls float8_e4m3, and `fp8_<variant>` the float8_<variant> of that name.
DTYPE_ALIASES = {"fp32": "float32", "f32": "float32", "fp16": "float16", "f16": "float16", "half": "float16",
                 "bf16": "bfloat16", "fp8": "float8_e4m3", "tf32": "tfloat32", "fp64": "float64", "double": "float64"}


def canonical_name(text: str | None) -> str | None:
    """A dtype name as written (`BF16`, `fp8_e4m3fn`, `float8_e4m3`) in the form `significand_bits` reads."""
    if not text:
        return None
    n = text.strip().lower()
    if n.startswith("fp8_"):
        n = "float8_" + n[4:]
    return DTYPE_ALIASES.get(n, n)


@functools.lru_cache(maxsize=128)
def significand_bits(text: str | None) -> int | None:
    """Significand bits with the implicit one (finfo's nmant + 1) of a float dtype name, None for anything else
    (integers, the x4-packed MX words, unknown names). From ml_dtypes/numpy, so every fp8 variant ml_dtypes knows
    (e4m3fn, e4m3fnuz, e5m2fnuz, e4m3b11fnuz, the MX scale e8m0fnu: 1) is covered; tfloat32 has 10 stored bits."""
    n = canonical_name(text)
    if n is None or n in PACKED:
        return None
    if n == "tfloat32":
        return 11
    try:
        dt = np.dtype(getattr(ml_dtypes, n)) if hasattr(ml_dtypes, n) else np.dtype(n)
    except TypeError:
        return None
    if dt.kind not in "fV" or not n.startswith(("float", "bfloat")):
        return None
    try:
        return int(ml_dtypes.finfo(dt).nmant) + 1
    except (TypeError, ValueError):
        return None
