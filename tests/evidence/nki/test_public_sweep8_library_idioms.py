"""Semantics the eighth public-kernel sweep (nki-library attention and MLP kernels) found mishandled, each on a
kernel written here."""

from __future__ import annotations

import numpy as np

from evidence.nki import load_kernel, simulate

RNG = np.random.default_rng(81)

# A `@dataclass` NKIObject whose attributes carry no annotation, built with keywords naming them: CPython's
# generated `__init__` takes no field, the NKI compiler takes the keywords (nki-library's attention passes its
# per-section parameters this way). An annotated dataclass beside it keeps its own constructor.
UNANNOTATED_CONFIG = '''
from dataclasses import dataclass

import nki
import nki.isa as nisa
import nki.language as nl


@dataclass
class Step(nl.NKIObject):
    index = None
    factor = None


@dataclass
class Shape(nl.NKIObject):
    rows: int = None
    cols: int = 1


@nki.jit
def scaled(x):
    shape = Shape(x.shape[0], cols=x.shape[1])
    step = Step(index=1, factor=3.0)
    t = nl.ndarray((shape.rows, shape.cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(t, t, op0=nl.multiply, operand0=step.factor * step.index)
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_a_dataclass_nkiobject_takes_keywords_naming_its_unannotated_attributes():
    x = RNG.standard_normal((128, 8)).astype(np.float32)
    mod = load_kernel(UNANNOTATED_CONFIG, display="scaled.py")
    got = simulate(mod.scaled, x).outputs[0]
    np.testing.assert_array_equal(got, x * np.float32(3.0))


# Twelve [128, 128] fp32 PSUM tiles (512 B each) packed four to a bank by `address=(0, byte offset)`, all live at
# once: they occupy 3 banks, not 12 (nki-library places its PSUM tiles by address, at multiples of 2 KiB).
PACKED_PSUM = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def packed(a, b):
    K, M = a.shape
    a_t = nl.ndarray((K, M), dtype=nl.float32, buffer=nl.sbuf)
    b_t = nl.ndarray((K, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_t, src=a)
    nisa.dma_copy(dst=b_t, src=b)
    tiles = []
    for i in range(12):
        ps = nl.ndarray((M, 128), dtype=nl.float32, buffer=nl.psum, address=(0, (i // 4) * 2048 + (i % 4) * 512))
        nisa.nc_matmul(ps, a_t, b_t)
        tiles.append(ps)
    res = nl.ndarray((M, 12 * 128), dtype=nl.float32, buffer=nl.sbuf)
    for i in range(12):
        nisa.tensor_copy(res[:, i * 128:(i + 1) * 128], tiles[i])
    out = nl.ndarray((M, 12 * 128), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def test_psum_tiles_placed_by_address_count_the_banks_they_are_placed_in():
    a = RNG.standard_normal((64, 128)).astype(np.float32)
    b = RNG.standard_normal((64, 128)).astype(np.float32)
    mod = load_kernel(PACKED_PSUM, display="packed.py")
    sim = simulate(mod.packed, a, b)
    np.testing.assert_allclose(sim.outputs[0], np.tile(a.T @ b, (1, 12)), rtol=1e-5, atol=1e-4)
    assert sim.report.psum_peak_banks == 3
    assert not [f for f in sim.report.findings if f.code == "psum_capacity_exceeded"]


# Eight [128, 8192] fp32 SBUF tiles (32 KiB per partition each) rotating through two slots by `address=`, kept in a
# list as nki-library's modular allocator keeps them: 64 KiB per partition, not 256 KiB (over trn2's 208 KiB).
ROTATING_SBUF = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def rotating(x):
    P, F = x.shape
    SLOT = F * 4
    bufs = [nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf, address=(0, 4096 + (i % 2) * SLOT)) for i in range(8)]
    acc = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf, address=(0, 4096 + 2 * SLOT))
    nisa.memset(acc, value=0.0)
    for i in range(8):
        nisa.dma_copy(dst=bufs[i], src=x)
        nisa.tensor_tensor(acc, acc, bufs[i], op=nl.add)
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


def test_sbuf_tensors_placed_on_the_same_bytes_count_once_in_the_sbuf_peak():
    x = RNG.standard_normal((128, 8192)).astype(np.float32)
    mod = load_kernel(ROTATING_SBUF, display="rotating.py")
    sim = simulate(mod.rotating, x, target="trn2")
    np.testing.assert_allclose(sim.outputs[0], x * 8, rtol=1e-6)
    assert sim.report.sbuf_peak_bytes_per_partition == 3 * 8192 * 4  # the union of the live spans
    assert not [f for f in sim.report.findings if f.code == "sbuf_capacity_exceeded"]


# `range_select` requires on_false_value = fp32.min; the engine takes it as an fp32 immediate, so the decimal
# literal -3.4028235e38 (nki-library's _FLOAT32_MIN) is that value, not a different one.
RANGE_SELECT_LITERAL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def window(x, lo, hi):
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    b0 = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    b1 = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=b0, src=lo)
    nisa.dma_copy(dst=b1, src=hi)
    res = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    mx = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(res, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less_equal, bound0=b0,
                      bound1=b1, reduce_op=nl.maximum, reduce_res=mx, range_start=0, on_false_value=-3.4028235e38)
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def test_range_select_takes_the_decimal_literal_of_fp32_min():
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    lo = RNG.integers(0, 32, (128, 1)).astype(np.float32)
    hi = lo + RNG.integers(0, 32, (128, 1)).astype(np.float32)
    mod = load_kernel(RANGE_SELECT_LITERAL, display="window.py")
    got = simulate(mod.window, x, lo, hi, target="trn2").outputs[0]
    j = np.arange(64)[None, :]
    np.testing.assert_array_equal(got, np.where((j >= lo) & (j <= hi), x, np.finfo(np.float32).min))


# A placed tile freed (its helper returns) gives back only its span: four [128, 8192] fp32 tiles placed and freed in
# turn, then six unplaced ones live together (192 KiB per partition), which the peak must still count in full.
PLACED_THEN_FREED = '''
import nki
import nki.isa as nisa
import nki.language as nl


def scaled_copy(x, acc):
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_tensor(acc, acc, t, op=nl.add)


@nki.jit
def placed_then_freed(x):
    P, F = x.shape
    acc = nl.ndarray((P, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(acc, value=0.0)
    for i in range(4):
        scaled_copy(x[:, 0:8], acc)
    big = [nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf) for _ in range(6)]
    for b in big:
        nisa.dma_copy(dst=b, src=x)
    for b in big[1:]:
        nisa.tensor_tensor(big[0], big[0], b, op=nl.add)
    out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=big[0])
    return out
'''


def test_a_freed_placed_tile_gives_back_its_span_and_nothing_more():
    x = RNG.standard_normal((128, 8192)).astype(np.float32)
    mod = load_kernel(PLACED_THEN_FREED, display="placed_then_freed.py")
    sim = simulate(mod.placed_then_freed, x, target="trn2")
    np.testing.assert_allclose(sim.outputs[0], x * 6, rtol=1e-5)
    assert sim.report.sbuf_peak_bytes_per_partition >= 6 * 8192 * 4
