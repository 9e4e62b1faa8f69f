"""A minimal `.npy` writer for the child that submitted code cannot redirect.

It is imported before any submitted code runs and keeps its own references to the functions it
uses, so a kernel that replaces `np.save`, `np.savez`, `os.write` or `open` changes nothing here.
The parent reads the files with `np.load(allow_pickle=False)` after checking their sizes.
"""

from __future__ import annotations

import os

import numpy as np

_open, _write, _close, _replace, _getpid = os.open, os.write, os.close, os.replace, os.getpid
_contiguous, _ndarray, _memoryview, _repr, _len = np.ascontiguousarray, np.ndarray, memoryview, repr, len
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
_MAGIC = b"\x93NUMPY\x01\x00"
_KINDS = frozenset("biuf")


def header(a: np.ndarray) -> bytes:
    """The npy 1.0 header of a C-ordered array, padded so the data starts 64-byte aligned."""
    text = "{'descr': %s, 'fortran_order': False, 'shape': %s, }" % (_repr(a.dtype.str), _repr(tuple(a.shape)))
    pad = 64 - (_len(_MAGIC) + 2 + _len(text) + 1) % 64
    body = (text + " " * pad + "\n").encode("latin1")
    return _MAGIC + _len(body).to_bytes(2, "little") + body


def write_array(path: str, a: np.ndarray) -> None:
    """Write `a` (bool, integer or float) to `path` atomically (a temporary name, then a rename)."""
    a = _contiguous(a)
    if not isinstance(a, _ndarray) or a.dtype.kind not in _KINDS:
        raise TypeError(f"cannot save arrays of dtype {a.dtype}")
    tmp = f"{path}.{_getpid()}.tmp"  # per process: copies a kernel forked must not interleave
    fd = _open(tmp, _FLAGS, 0o600)
    try:
        _write_all(fd, header(a))
        _write_all(fd, _memoryview(a).cast("B"))
    finally:
        _close(fd)
    _replace(tmp, path)


def write_bytes(path: str, data: bytes) -> None:
    tmp = f"{path}.{_getpid()}.tmp"
    fd = _open(tmp, _FLAGS, 0o600)
    try:
        _write_all(fd, data)
    finally:
        _close(fd)
    _replace(tmp, path)


def _write_all(fd: int, data) -> None:
    view = _memoryview(data)
    while view:
        n = _write(fd, view[: 1 << 24])
        view = view[n:]
