"""`nki.tensor` (standalone nki): trace-time tensors, the compile-time constants a kernel builds on the
host and hands to `nl.shared_constant(...)` (`ntensor.identity(128, nl.int8)`, `ntensor.arange(0, 32, 1,
dtype=nl.int32)`, `ntensor.zeros((64, 64), dtype=nl.int8) + 1`).

They hold no device memory and cost nothing until `shared_constant` places them in HBM, so here they are
plain numpy arrays in the requested dtype: their arithmetic is numpy's, evaluated while tracing.
"""

from __future__ import annotations

import numpy as np

from evidence.nki import dtypes as _dt
from evidence.nki import state as _state
from evidence.nki.errors import UnsupportedMethodError

TraceTimeTensor = np.ndarray


def _storage(dtype) -> np.dtype:
    # tfloat32 and the packed x4 types have no numpy storage of their own: keep fp32 values
    resolved = _dt.resolve(dtype) if dtype is not None else _dt.float32
    return resolved if isinstance(resolved, np.dtype) else np.dtype(np.float32)


def identity(n, dtype=None) -> np.ndarray:
    """An `n x n` identity matrix."""
    return np.eye(int(n), dtype=_storage(dtype))


def zeros(shape, dtype=None) -> np.ndarray:
    return np.zeros(_shape(shape), dtype=_storage(dtype))


def ones(shape, dtype=None) -> np.ndarray:
    return np.ones(_shape(shape), dtype=_storage(dtype))


def full(shape, fill_value, dtype=None) -> np.ndarray:
    return np.full(_shape(shape), fill_value, dtype=_storage(dtype))


def arange(start, stop=None, step=1, dtype=None) -> np.ndarray:
    """Values `start, start + step, ...` below `stop` (numpy's `arange`; `arange(n)` counts from 0)."""
    if stop is None:
        start, stop = 0, start
    return np.arange(start, stop, step).astype(_storage(dtype))


def _shape(shape) -> tuple[int, ...]:
    return (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(f"module 'nki.tensor' has no attribute {name!r}")
    st = _state.get()
    file, line = st.where() if st is not None else (None, 0)
    raise UnsupportedMethodError(
        "unsupported_op", f"nki.tensor.{name} is not simulated (trace-time tensors: identity, zeros, ones, full, "
        "arange); add it to evidence/nki/shim/standalone/tensor.py", file, line)
