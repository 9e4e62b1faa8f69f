"""A dequantised fp8 value rounded back to fp8: precision evidence the outputs alone do not show.

Scaling fp8 data by a wider float (a per-block or per-channel dequantisation scale) and writing the
product as fp8 again rounds every value a second time: up to 1/16 relative for e4m3, 1/8 for e5m2, the
precision the scale was there to keep. An output comparison shows the loss only as a larger error,
and the error model cannot tell it from the fp8 inputs' own rounding (its device-faithful reference
computes at the kernel's lowest-precision dtype), so the instruction is reported where it happens.

A check rule marks an instruction that multiplies or divides fp8 data by a wider float (`mark`);
`dispatch.call` judges the mark against the dtype actually written (`judge`), which for a dst-first
call is the destination's. Quantising (bf16 or fp32 data scaled into fp8) and fp8 x fp8 products are
not marked, nor is a power-of-two scale (exact in fp8 unless it leaves the range).
"""

from __future__ import annotations

import math

import numpy as np

from evidence.nki import dtypes

SCALING_OPS = frozenset({"multiply", "divide"})
COPY_FUNCTIONS = frozenset({"copy", "identity"})  # `activation` functions that only apply its scale


def is_fp8(dt) -> bool:
    """A scalar fp8 dtype (the packed x4 forms hold raw words, not values the kernel scales)."""
    return dtypes.is_float(dt) and dtypes.name(dt).startswith("float8")


def _wider_scale(x) -> str | None:
    """How `x` reads as a scale wider than fp8: a float tile's dtype, or "a float scalar"; None otherwise."""
    if getattr(x, "alloc", None) is not None:  # a tile (tensor sits above this module)
        return dtypes.name(x.dtype) if dtypes.is_float(x.dtype) and not is_fp8(x.dtype) else None
    if isinstance(x, (float, np.floating)) and math.isfinite(x) and x != 0:
        return None if abs(math.frexp(x)[0]) == 0.5 else "a float scalar"  # a power of two rescales exactly
    return None


def mark(c, data, op_name: str | None, operand) -> None:
    """Note on call `c` that it scales fp8 `data` by a wider `operand` with `op_name` (multiply/divide)."""
    if op_name in SCALING_OPS and is_fp8(data.dtype):
        scale = _wider_scale(operand)
        if scale is not None:
            c.p["fp8_scaled"] = (dtypes.name(data.dtype), scale)


def judge(st, c, written) -> None:
    """Report a marked call whose written tile is fp8 again (`fp8_rerounded`, at the kernel line)."""
    marked = c.p.get("fp8_scaled")
    if marked is None or written is None or not is_fp8(written.dtype):
        return
    src, scale = marked
    out = dtypes.name(written.dtype)
    bound = "1/16" if out.startswith("float8_e4m3") else "1/8"
    st.finding("fp8_rerounded",
               f"{src} data scaled by {scale} is written as {out} again: each dequantised value is rounded to fp8 a "
               f"second time (up to {bound} relative), which loses what the scale kept; keep the scaled values in "
               "bfloat16, or apply the scale to the fp32 result after the matmul", "medium")
