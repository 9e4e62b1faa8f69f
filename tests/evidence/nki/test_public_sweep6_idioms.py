"""Semantics the sixth public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np

import pytest

from evidence.nki import SimulationError, load_kernel, simulate
from evidence.nki.errors import UnsupportedOpError

RNG = np.random.default_rng(61)

# activation_reduce with its reduce op named by the reduction function (`np.sum`), as tested public kernels pass it
ROW_EXP_SUMS = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def row_exp_sums(x):
    out = nl.ndarray((128, 1), dtype=np.float32, buffer=nl.shared_hbm)
    tile = nl.load(x)
    sums = nl.ndarray((128, 1), dtype=np.float32, buffer=nl.sbuf)
    nisa.activation_reduce(op=np.exp, data=tile, reduce_op=REDUCE, reduce_res=sums)
    nl.store(out, sums)
    return out
'''


def test_activation_reduce_takes_np_sum_as_its_addition():
    x = RNG.standard_normal((128, 96)).astype(np.float32)
    expect = np.exp(x).sum(axis=1, keepdims=True)
    for reduce in ("np.sum", "np.add", "nl.add"):
        mod = load_kernel(ROW_EXP_SUMS.replace("REDUCE", reduce), display="sums.py")
        got = simulate(mod.row_exp_sums, x).outputs[0]
        np.testing.assert_allclose(got, expect, rtol=1e-5)


# Eight logical PSUM blocks of each of two tensors, placed by direct allocation onto the same two banks; every block
# is used while the others are still live. The compiler's own allocation would need a bank per live block.
PINNED_PSUM = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def bank_of(idx, parts, fbytes):
    return (idx[0] % 2, 0, 0)


@nki.jit
def pinned(a, b):
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    first = nl.ndarray((8, nl.par_dim(128), 512), dtype=np.float32, buffer=PLACE_FIRST)
    second = nl.ndarray((8, nl.par_dim(128), 512), dtype=np.float32, buffer=PLACE_SECOND)
    acc = nl.zeros((128, 512), dtype=np.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(8):
        first[i] = nisa.nc_matmul(at, bt)
        second[i] = nisa.nc_matmul(at, bt)
    for i in nl.sequential_range(8):
        acc[...] = nl.add(acc, first[i])
        acc[...] = nl.add(acc, second[i])
    nl.store(out, acc)
    return out
'''


def _pinned(first: str, second: str):
    mod = load_kernel(PINNED_PSUM.replace("PLACE_FIRST", first).replace("PLACE_SECOND", second), display="pinned.py")
    a = RNG.standard_normal((128, 128)).astype(np.float32)
    b = RNG.standard_normal((128, 512)).astype(np.float32)
    sim = simulate(mod.pinned, a, b)
    np.testing.assert_allclose(sim.outputs[0], 16 * (a.T @ b), rtol=2e-5, atol=1e-3)
    return sim.report


def test_psum_blocks_placed_by_direct_allocation_count_the_banks_they_are_placed_in():
    modulo = "ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,))"
    for first, second in ((modulo, modulo), ("ncc.psum.alloc(bank_of)", modulo)):
        report = _pinned(first, second)
        assert report.psum_peak_banks <= 3, report.psum_peak_banks  # banks 0 and 1, and a matmul's result tile
        assert "psum_capacity_exceeded" not in {f.code for f in report.findings}
    # left to the compiler, sixteen live blocks need sixteen banks: the capacity finding stays
    report = _pinned("nl.psum", "nl.psum")
    assert report.psum_peak_banks >= 16
    assert "psum_capacity_exceeded" in {f.code for f in report.findings}


# A TensorE transpose (PSUM result) used directly as a matmul operand, as nki-samples' flash-attention backward
# does (its tests run it through the beta simulator and on hardware): the beta compiler copies it to SBUF
PSUM_OPERAND = '''
import numpy as np
import DIALECT_ISA as nisa
import DIALECT_LANGUAGE as nl
DECORATOR


@nki.jit
def product(a, b):
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    a_t = nisa.nc_transpose(nl.load(a))
    acc = nl.zeros((128, 512), dtype=np.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(a_t, nl.load(b))
    nl.store(out, nl.copy(acc))
    return out
'''


def test_a_psum_matmul_operand_is_copied_in_beta_with_a_low_finding_and_refused_in_nki_0_3():
    a = RNG.standard_normal((128, 128)).astype(np.float32)
    b = RNG.standard_normal((128, 512)).astype(np.float32)
    beta = PSUM_OPERAND.replace("DIALECT_ISA", "neuronxcc.nki.isa").replace("DIALECT_LANGUAGE", "neuronxcc.nki.language")
    sim = simulate(load_kernel(beta.replace("DECORATOR", "import neuronxcc.nki as nki"), display="bwd.py").product, a, b)
    np.testing.assert_allclose(sim.outputs[0], a @ b, rtol=1e-4, atol=1e-4)  # stationary = a^T, as [K, M]
    (finding,) = [f for f in sim.report.findings if f.code == "matmul_operand_in_psum"]
    assert finding.line == 13 and "stationary" in finding.message
    standalone = '''
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def product(a, b):
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    a_t = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.psum)
    nisa.nc_transpose(dst=a_t, data=t)
    m = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=m, src=b)
    acc = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=a_t, moving=m)
    return out
'''
    with pytest.raises(SimulationError) as info:
        simulate(load_kernel(standalone, display="new.py").product, a, b)
    assert info.value.code == "err_unsupported_memory" and info.value.line == 18


PRIVATE_API = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.nki._private.private_api import core_barrier, sendrecv


@nki.jit
def copy(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(a))
    CALL
    return out
'''


def test_private_multicore_primitives_import_and_are_unsupported_only_where_called():
    a = RNG.standard_normal((128, 64)).astype(np.float32)
    ran = simulate(load_kernel(PRIVATE_API.replace("CALL", "pass"), display="tg.py").copy, a)
    np.testing.assert_array_equal(ran.outputs[0], a)
    with pytest.raises(UnsupportedOpError) as info:
        simulate(load_kernel(PRIVATE_API.replace("CALL", "sendrecv(out, out, 1)"), display="tg.py").copy, a)
    assert info.value.line == 12 and "private_api.sendrecv" in info.value.message
