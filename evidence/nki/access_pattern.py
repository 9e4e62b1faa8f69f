"""nki 0.3+ access patterns: `t.ap(pattern=[[step, num], ...], offset=0, ...)`.

An access pattern addresses a tensor's elements in its row-major (flattened) layout: element
(i0, i1, ...) is at `start + offset + sum(step_k * i_k)`, where `start` is where the tensor (or the
view `.ap` is called on) begins. For an SBUF or PSUM tensor the first [step, num] pair is the
partition axis. A static pattern is a strided numpy view (stride-0 pairs broadcast); a
`scalar_offset` (a [1, 1] tile or a register, read at run time) moves the start by whole rows of
`indirect_dim`; a `vector_offset` ([P, 1] tile of row indices, indirect_dim 0) makes each partition
read its own row: a gather, resolved per instruction like any index-tile access.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided


def parse(pattern) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """([num, ...], [step, ...]) of a pattern [[step, num], ...]; raises ValueError when malformed."""
    try:
        pairs = [(int(step), int(num)) for step, num in pattern]
    except (TypeError, ValueError):
        raise ValueError(f"pattern must be a list of [step, num] pairs, got {pattern!r}") from None
    if not pairs or any(n <= 0 for _, n in pairs):
        raise ValueError(f"pattern needs at least one [step, num] pair with num > 0, got {pattern!r}")
    return tuple(n for _, n in pairs), tuple(s for s, _ in pairs)


def span(start: int, shape, steps) -> tuple[int, int]:
    """Lowest and highest flat element a pattern touches."""
    lo = start + sum(min(0, s * (n - 1)) for s, n in zip(steps, shape))
    hi = start + sum(max(0, s * (n - 1)) for s, n in zip(steps, shape))
    return lo, hi


def start_of(view: np.ndarray, base: np.ndarray) -> int:
    """The flat element index (in `base`'s row-major layout) where `view` begins."""
    delta = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return delta // base.itemsize if base.itemsize else 0


def strided(base: np.ndarray, start: int, shape, steps) -> np.ndarray:
    """The elements of C-contiguous `base` a static pattern addresses, as a view."""
    flat = base.reshape(-1)
    return as_strided(flat[start:], shape=shape, strides=[s * base.itemsize for s in steps],
                      writeable=base.flags.writeable)


def gathered(start: int, shape, steps, rows: np.ndarray, row_elems: int) -> np.ndarray:
    """Flat element indices of a vector-offset pattern: partition p reads row `rows[p]` (the first
    pair's step is replaced by the row size)."""
    grid = np.zeros(shape, dtype=np.int64) + start
    rows = rows.reshape((shape[0],) + (1,) * (len(shape) - 1))
    grid = grid + rows * row_elems
    for k, (n, s) in enumerate(zip(shape[1:], steps[1:]), 1):
        axis = [1] * len(shape)
        axis[k] = n
        grid = grid + s * np.arange(n, dtype=np.int64).reshape(axis)
    return grid


def unaddressable(st, pattern, start: int, shape, steps, size: int, dtype, buffer: str, what: str):
    """An `UnaddressableView` when the pattern from `start` leaves the `size` elements it may address (`what`
    names them in the message), else None."""
    lo, hi = span(start, shape, steps)
    if lo >= 0 and hi < size:
        return None
    file, line = st.where()
    return UnaddressableView(shape, dtype, buffer, f"access pattern {pattern} (offset {start}, built at {file}:{line}) "
                             f"addresses elements [{lo}, {hi}] of {what}", st)


class UnaddressableView:
    """A static `.ap()` view reaching outside its tensor. Building one is legal: the bounds are the
    instruction's to check (nkilib's transposed output projection builds a stationary view for every PSUM
    group slot and skips the matmuls of slots past the last, in kernels tested on hardware). Its shape,
    dtype and buffer answer; an instruction taking it, or anything else done with it, is
    `err_tensor_access_out_of_bound` at that line."""

    __slots__ = ("shape", "dtype", "buffer", "message", "state")

    def __init__(self, shape, dtype, buffer: str, message: str, state) -> None:
        self.shape, self.dtype, self.buffer, self.message, self.state = tuple(shape), dtype, buffer, message, state

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def error(self):
        return self.state.error("err_tensor_access_out_of_bound", self.message)

    def __getattr__(self, name: str):
        raise self.error()

    def __getitem__(self, key):
        raise self.error()

    def __repr__(self) -> str:
        return f"UnaddressableView({list(self.shape)})"
