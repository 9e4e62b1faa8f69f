"""What the tenth public-kernel sweep found missing or mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np

from evidence.nki import load_kernel, simulate

RNG = np.random.default_rng(101)

# A K-loop matmul that copies PSUM out and stores the output in every iteration of the loop (an agent-written
# level-6 kernel did this): only the last store survives, the others move bytes nobody reads. Beside it the same
# kernel storing once after the loop, and kernels whose repeated writes are read in between or are not comparable.
STORES = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def store_in_k_loop(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    for k in range(K // 128):
        a = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, 0:M])
        b = nl.ndarray((128, N), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, 0:N])
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)
        nisa.tensor_copy(dst=res, src=acc)
        nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def store_after_k_loop(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for k in range(K // 128):
        a = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=a, src=lhsT[k * 128:(k + 1) * 128, 0:M])
        b = nl.ndarray((128, N), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=rhs[k * 128:(k + 1) * 128, 0:N])
        nisa.nc_matmul(dst=acc, stationary=a, moving=b)
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


@nki.jit
def accumulate_in_hbm(x):
    # the output is the running sum: each pass reads what the last one stored
    R, F = x.shape
    out = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.shared_hbm)
    z = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=z, value=0.0)
    nisa.dma_copy(dst=out, src=z)
    for r in range(R // 128):
        t = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[r * 128:(r + 1) * 128, 0:F])
        s = nl.ndarray((128, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=out)
        nisa.tensor_tensor(dst=s, data1=s, data2=t, op=nl.add)
        nisa.dma_copy(dst=out, src=s)
    return out


@nki.jit
def every_program_stores(x):
    # both SPMD programs store the same result: instances are not compared with each other
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def read_as_bytes_between_stores(x):
    # the scratch is read back through a dtype view between its two stores: the first store was used
    R, F = x.shape
    out = nl.ndarray((R, F), dtype=nl.float32, buffer=nl.shared_hbm)
    scratch = nl.ndarray((R, F), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((R, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=scratch, src=t)
    b = nl.ndarray((R, 2 * F), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=scratch.ap(pattern=[[2 * F, R], [1, 2 * F]], offset=0, dtype=nl.bfloat16))
    nisa.dma_copy(dst=scratch, src=t)
    u = nl.ndarray((R, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=u, src=scratch)
    nisa.dma_copy(dst=out, src=u)
    return out


@nki.jit
def zero_fill_then_rows(x):
    # a zero fill of the whole output, then the real rows over a small part of it: the overwritten share is low
    R, F = x.shape
    out = nl.ndarray((1024, F), dtype=x.dtype, buffer=nl.shared_hbm)
    z = nl.ndarray((128, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.memset(dst=z, value=0.0)
    for r in range(8):
        nisa.dma_copy(dst=out[r * 128:(r + 1) * 128, 0:F], src=z)
    t = nl.ndarray((R, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out[0:R, 0:F], src=t)
    return out
'''


# Every affine iteration storing one tile (an index that lost its tile offset): the compiler's output dependency,
# reported as such, not once more as stores overwritten unread.
AFFINE_SAME_TILE = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def same_tile(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(x.shape[0] // 128):
        nl.store(out[0:128, :], value=nl.load(x[t * 128:(t + 1) * 128, :]))
    return out
'''


def _overwritten(sim):
    return [f for f in sim.report.findings if f.code == "hbm_store_overwritten"]


def test_store_inside_the_k_loop_is_reported_at_its_line():
    mod = load_kernel(STORES, display="stores.py")
    lhsT = RNG.standard_normal((512, 128)).astype(np.float32)
    rhs = RNG.standard_normal((512, 256)).astype(np.float32)
    sim = simulate(mod.store_in_k_loop, lhsT, rhs)
    np.testing.assert_allclose(sim.outputs[0], lhsT.T @ rhs, rtol=1e-4, atol=1e-3)
    (f,) = _overwritten(sim)
    assert f.severity == "medium" and f.file == "stores.py" and f.line == 21
    assert "384.0 KiB of the 512.0 KiB stored to HBM (75%)" in f.message and "stores.py:21" in f.message
    assert not _overwritten(simulate(mod.store_after_k_loop, lhsT, rhs))
    # trace-only runs hold no index values, so they track nothing
    assert not _overwritten(simulate(mod.store_in_k_loop, lhsT, rhs, trace_only=True))


def test_only_writes_nothing_read_are_counted():
    mod = load_kernel(STORES, display="stores.py")
    x = RNG.standard_normal((64, 32)).astype(np.float32)
    (f,) = _overwritten(simulate(mod.zero_fill_then_rows, x))
    assert f.severity == "low" and f.line == 97 and "(6%)" in f.message  # 8 KiB of 136 KiB
    x = RNG.standard_normal((384, 64)).astype(np.float32)
    sim = simulate(mod.accumulate_in_hbm, x)  # every store is read by the next pass
    np.testing.assert_allclose(sim.outputs[0], x.reshape(3, 128, 64).sum(0), rtol=1e-5, atol=1e-5)
    assert not _overwritten(sim)
    y = RNG.standard_normal((128, 64)).astype(np.float32)
    assert not _overwritten(simulate(mod.every_program_stores, y, grid=(2,)))
    z = RNG.standard_normal((128, 32)).astype(np.float32)
    assert not _overwritten(simulate(mod.read_as_bytes_between_stores, z))
    sim = simulate(load_kernel(AFFINE_SAME_TILE, display="same.py").same_tile, x)
    assert {f.code for f in sim.report.findings} >= {"err_unexpected_output_dependencies"} and not _overwritten(sim)


def test_a_name_missing_from_an_nki_module_is_named_under_that_module():
    # transformers-neuronx's pre-release kernels import `program_id` from the top-level module (no documented NKI
    # release has it there): the error named the simulator's own module and file
    import pytest

    from evidence.nki.errors import KernelLoadError

    with pytest.raises(KernelLoadError) as info:
        load_kernel("import numpy as np\nfrom neuronxcc.nki import program_id, affine_range\n", display="old.py")
    err = info.value
    assert err.code == "import_error" and err.line == 2
    assert err.message.startswith("ImportError: cannot import name 'program_id' from 'neuronxcc.nki':")
    assert "evidence" not in err.message and "shim" not in err.message
