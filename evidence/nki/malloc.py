"""glibc malloc settings for the length of a simulation: keep freed tile buffers for reuse.

A simulation allocates and frees a few hundred KiB per instruction (a [128, 512] fp32 product or
PSUM tile is 256 KiB). glibc serves every block of 128 KiB or more with its own mmap and returns it
on free (and trims the heap tops of the worker threads' arenas as soon as 128 KiB is free), so each
such tile costs fresh pages: a page fault per 4 KiB (about 5 us each on this VM), and BLAS writing
its output into zero-filled pages. While a simulation runs, blocks up to 1 GiB come from the heaps
and stay there when freed; when the last simulation of the process ends, the thresholds become those
glibc's own adjustment reaches in a numpy process (32 MiB, trim at 64 MiB) and the free memory goes
back to the OS (`malloc_trim`). Where glibc is absent (another libc, another OS), nothing changes.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager

from evidence.nki.process_setting import ProcessSetting

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
_DURING = ((M_MMAP_THRESHOLD, 1 << 30), (M_TRIM_THRESHOLD, 4 << 30), (M_TOP_PAD, 256 << 20))
# After: where glibc's dynamic threshold settles in a numpy process once a large block was freed (its
# maximum on 64-bit, trim at twice that). Setting a threshold turns the dynamic adjustment off for good,
# and glibc's start values (128 KiB) would leave every later 128 KiB+ array of the process a fresh mmap.
_AFTER = ((M_MMAP_THRESHOLD, 32 << 20), (M_TRIM_THRESHOLD, 64 << 20), (M_TOP_PAD, 128 << 10))

_libc = None


def _glibc():
    global _libc
    if _libc is None:
        try:  # the process's own symbols (no ctypes.util.find_library: it runs ldconfig in a subprocess)
            lib = ctypes.CDLL(None)
            _libc = lib if hasattr(lib, "mallopt") and hasattr(lib, "malloc_trim") else False
        except (OSError, AttributeError):
            _libc = False
    return _libc


def _set(lib, settings) -> None:
    for param, value in settings:
        lib.mallopt(ctypes.c_int(param), ctypes.c_int(min(value, 2**31 - 1)))


def _undo() -> None:
    lib = _glibc()
    _set(lib, _AFTER)
    lib.malloc_trim(ctypes.c_size_t(0))


_held = ProcessSetting(lambda: _set(_glibc(), _DURING), _undo)


@contextmanager
def reuse_freed_memory(enabled: bool = True):
    """While inside (re-entrant, thread-safe), freed blocks of up to 1 GiB stay in the process for reuse.

    `enabled` False: leave malloc alone (a run started by submitted code, e.g. a kernel module calling its
    kernel at import time: the sandbox's monitor would report the ctypes calls as the submission's)."""
    if not (enabled and _glibc()):
        yield
        return
    with _held.held():
        yield
