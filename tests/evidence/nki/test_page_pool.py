"""Lazily mapped arrays of a simulation (evidence.nki.page_pool): reused only when nothing uses them, and
then indistinguishable from fresh zero pages."""

from __future__ import annotations

import numpy as np

from evidence.nki.page_pool import LAZY_BYTES, PagePool

SHAPE = (64, 128, 1024)  # 32 MiB of fp32


def test_a_mapping_in_use_is_never_handed_out_again():
    pool = PagePool()
    a = pool.zeros(SHAPE, np.float32)
    view = a[3:5, ::2].T  # a view alone keeps the memory in use
    del a
    b = pool.zeros(SHAPE, np.float32)
    assert not np.shares_memory(b, view)
    assert len(pool.maps) == 2


def test_a_reused_mapping_reads_as_zeros_whatever_the_last_use_wrote():
    pool = PagePool()
    for k in range(4):
        a = pool.zeros(SHAPE, np.float32)
        assert not a.any(), f"use {k} sees data of an earlier use"
        a[k * 8:(k + 1) * 8] += 1.0  # each use writes other blocks ...
        a[32:64] += 2.0  # ... and the same ones: over half the pages (zeroed in place, then dropped whole)
        assert a.max() == 2.0
        del a
    assert len(pool.maps) == 1


def test_small_arrays_are_plain_zeros():
    pool = PagePool()
    small = pool.zeros((LAZY_BYTES // 8,), np.float32)
    assert not small.any() and not pool.maps


def test_malloc_settings_hold_for_nested_runs_and_end_with_the_last():
    from evidence.nki import malloc

    with malloc.reuse_freed_memory():
        with malloc.reuse_freed_memory():
            assert malloc._active == 2
        assert malloc._active == 1  # the outer run keeps its settings
    assert malloc._active == 0
