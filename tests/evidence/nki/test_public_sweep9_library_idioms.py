"""Semantics the ninth public-kernel sweep (nki-library decode MLP and its norm subkernels) found mishandled,
each on a kernel written here."""

from __future__ import annotations

import numpy as np

from evidence.nki import load_kernel, simulate

RNG = np.random.default_rng(91)

# An annotated `@dataclass` NKIObject built without one of its fields (no default): CPython's generated
# `__init__` refuses the call, the NKI compiler builds the object (nki-library's decode MLP constructs its
# dimension record without one of the fields it declares). The field stays unset: reading it is the kernel's
# own error at that line, not the constructor's.
MISSING_FIELD = '''
from dataclasses import dataclass

import nki
import nki.isa as nisa
import nki.language as nl


@dataclass
class Dims(nl.NKIObject):
    rows: int
    cols: int
    spare: int
    scale: float = 1.0


@nki.jit
def scaled(x, read_spare=False):
    dims = Dims(rows=x.shape[0], cols=x.shape[1], scale=2.0)
    t = nl.ndarray((dims.rows, dims.cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    factor = dims.scale
    if read_spare:
        factor = factor * dims.spare
    nisa.tensor_scalar(t, t, op0=nl.multiply, operand0=factor)
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_a_dataclass_nkiobject_built_without_one_of_its_fields_leaves_it_unset():
    x = RNG.standard_normal((128, 8)).astype(np.float32)
    mod = load_kernel(MISSING_FIELD, display="dims.py")
    got = simulate(mod.scaled, x).outputs[0]
    np.testing.assert_array_equal(got, x * np.float32(2.0))


def test_reading_the_field_a_dataclass_nkiobject_was_built_without_is_the_kernels_error_where_it_reads_it():
    from evidence.nki.errors import KernelError

    x = RNG.standard_normal((128, 8)).astype(np.float32)
    mod = load_kernel(MISSING_FIELD, display="dims.py")
    try:
        simulate(mod.scaled, x, read_spare=True)
    except KernelError as exc:
        assert exc.line == 24 and "spare" in exc.message, (exc.line, exc.message)
    else:
        raise AssertionError("reading an unset field ran")


# Tensors placed by `address=` on the same bytes: the second written while the first still holds values the
# kernel reads afterwards (garbage on hardware; the simulator keeps the two apart, so the output alone is
# right) is reported at the read; reuse after the first tensor's last read, or after the first tensor wrote
# the bytes again, is legal and is not. `order` picks the schedule.
SHARED_BYTES = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def shared(x, order=0, offset_b=0, cols=0):
    P, F = x.shape
    n = cols or F
    a = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    b = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf, address=(0, offset_b))
    out = nl.ndarray((P, 2 * F), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=a, src=x)
    if order == 0:  # b written while a is live
        nisa.tensor_scalar(b, a, op0=nl.multiply, operand0=2.0)
        nisa.dma_copy(dst=out[:, 0:n], src=a[:, 0:n])
        nisa.dma_copy(dst=out[:, F:2 * F], src=b)
    elif order == 1:  # a finished before b is written
        nisa.dma_copy(dst=out[:, 0:F], src=a)
        nisa.memset(b, value=3.0)
        nisa.dma_copy(dst=out[:, F:2 * F], src=b)
    else:  # b in between, then a written again before it is read
        nisa.memset(b, value=3.0)
        nisa.dma_copy(dst=out[:, F:2 * F], src=b)
        nisa.dma_copy(dst=a, src=x)
        nisa.dma_copy(dst=out[:, 0:F], src=a)
    return out
'''


def _placement_findings(sim):
    return [f for f in sim.report.findings if f.code == "overlapping_placement"]


def test_a_placed_tensor_read_after_another_placement_wrote_its_bytes_is_reported_at_the_read():
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    mod = load_kernel(SHARED_BYTES, display="shared.py")
    sim = simulate(mod.shared, x, order=0)
    found = _placement_findings(sim)
    assert [f.line for f in found] == [17], found
    assert found[0].severity == "high"
    assert "shared.py:11" in found[0].message and "shared.py:16" in found[0].message, found[0].message


def test_reusing_a_placed_tensors_bytes_after_its_last_read_or_before_it_writes_them_again_is_not_reported():
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    mod = load_kernel(SHARED_BYTES, display="shared.py")
    for order in (1, 2):
        sim = simulate(mod.shared, x, order=order)
        assert _placement_findings(sim) == [], order
    # placed side by side (b starts where a ends): never the same bytes
    assert _placement_findings(simulate(mod.shared, x, order=0, offset_b=64 * 4)) == []


def test_a_partly_overlapping_placement_is_judged_on_the_bytes_the_read_takes():
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    mod = load_kernel(SHARED_BYTES, display="shared.py")
    # b starts at a's column 48: a's columns 0-47 never share bytes with it, 48-63 do; the whole-row read
    # of a at line 17 takes both, a read of its first 48 columns only the first
    assert [f.line for f in _placement_findings(simulate(mod.shared, x, order=0, offset_b=48 * 4))] == [17]
    assert _placement_findings(simulate(mod.shared, x, order=0, offset_b=48 * 4, cols=48)) == []


# Two PSUM accumulators on one bank: the second matmul group starts while the first group's result has not
# been copied out yet.
PSUM_SHARED_BANK = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def two_groups(a, b, early_copy=False, second=False):
    K, M = a.shape
    _, N = b.shape
    a_t = nl.ndarray((K, M), dtype=nl.float32, buffer=nl.sbuf)
    b_t = nl.ndarray((K, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=a_t, src=a)
    nisa.dma_copy(dst=b_t, src=b)
    res = nl.ndarray((M, 2 * N), dtype=nl.float32, buffer=nl.sbuf)
    p0 = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum, address=(0, 2048))
    p1 = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum, address=(0, 2048))
    nisa.nc_matmul(p0, a_t, b_t)
    if early_copy:
        nisa.tensor_copy(res[:, 0:N], p0)
    nisa.nc_matmul(p1, a_t, b_t)
    if second:  # p0 starts a second group over its old values: a fresh one (accumulate=False) reads none of them
        nisa.nc_matmul(p0, a_t, b_t, accumulate=False)
    if not early_copy:
        nisa.tensor_copy(res[:, 0:N], p0)
    nisa.tensor_copy(res[:, N:2 * N], p1)
    out = nl.ndarray((M, 2 * N), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=res)
    return out
'''


def test_two_psum_tiles_placed_on_one_bank_and_live_at_once_are_reported():
    a = RNG.standard_normal((128, 64)).astype(np.float32)
    b = RNG.standard_normal((128, 128)).astype(np.float32)
    mod = load_kernel(PSUM_SHARED_BANK, display="groups.py")
    assert [f.line for f in _placement_findings(simulate(mod.two_groups, a, b))] == [25]
    assert _placement_findings(simulate(mod.two_groups, a, b, early_copy=True)) == []
    # p0's values copied out, then p1's group, then a fresh group into p0 (accumulate=False reads nothing there):
    # p1's copy at line 26 reads bytes p0 wrote over
    assert [f.line for f in _placement_findings(simulate(mod.two_groups, a, b, early_copy=True, second=True))] == [26]


# `experimental_flags='skip-non-top-level-shared-hbm-check'` on the decorator switches off the compiler's check
# that shared_hbm tensors are created at the kernel's top level (nki-library's QKV dispatcher carries it, and its
# decode QKV kernel creates its output in a helper). Without the flag the nested creation stays the error.
NESTED_OUTPUT = '''
import nki
import nki.isa as nisa
import nki.language as nl


def _doubled(x):
    t = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(t, t, op0=nl.multiply, operand0=2.0)
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit(experimental_flags="skip-non-top-level-shared-hbm-check")
def flagged(x):
    return _doubled(x)


@nki.jit
def unflagged(x):
    return _doubled(x)


def wrapper(x):
    return flagged(x)
'''


def test_the_skip_non_top_level_shared_hbm_flag_lets_a_helper_create_the_output():
    from evidence.nki.errors import SimulationError

    x = RNG.standard_normal((128, 16)).astype(np.float32)
    mod = load_kernel(NESTED_OUTPUT, display="nested.py")
    np.testing.assert_array_equal(simulate(mod.flagged, x).outputs[0], 2 * x)
    np.testing.assert_array_equal(simulate(mod.wrapper, x).outputs[0], 2 * x)
    try:
        simulate(mod.unflagged, x)
    except SimulationError as exc:
        assert exc.code == "err_shared_hbm_must_in_kernel_level" and exc.line == 11, (exc.code, exc.line)
    else:
        raise AssertionError("a shared_hbm tensor created in a helper of an unflagged kernel ran")
