"""Semantics the seventh public-kernel sweep (nki-library kernels) found mishandled, each on a kernel written here."""

from __future__ import annotations

import numpy as np
import pytest

from evidence.nki import SimulationError, load_kernel, simulate

RNG = np.random.default_rng(71)

# Column sums of `x` [128, 4], one `.ap()` view per slot of a fixed-size group, built before the guard that
# skips slots past the tensor's last column: building a view that reaches outside is legal, using it is not.
GUARDED_SLOTS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def slots(x):
    P, F = x.shape
    SLOTS = 8
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    acc = nl.ndarray((P, SLOTS), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(acc, value=0.0)
    for s in range(SLOTS):
        col = t.ap(pattern=[[F, P], [1, 1]], offset=s)
        if s < LIMIT:
            nisa.tensor_copy(dst=acc[:, s:s + 1], src=col)
    out = nl.ndarray((P, SLOTS), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=acc)
    return out
'''


def test_an_out_of_bounds_access_pattern_is_an_error_only_where_an_instruction_uses_it():
    x = RNG.standard_normal((128, 4)).astype(np.float32)
    mod = load_kernel(GUARDED_SLOTS.replace("LIMIT", "F"), display="slots.py")
    got = simulate(mod.slots, x).outputs[0]
    np.testing.assert_array_equal(got[:, :4], x)
    np.testing.assert_array_equal(got[:, 4:], 0)
    mod = load_kernel(GUARDED_SLOTS.replace("LIMIT", "F + 1"), display="slots.py")
    with pytest.raises(SimulationError) as info:
        simulate(mod.slots, x)
    assert info.value.code == "err_tensor_access_out_of_bound"
    lines = GUARDED_SLOTS.splitlines()
    assert info.value.line == lines.index("            nisa.tensor_copy(dst=acc[:, s:s + 1], src=col)") + 1
    built = lines.index("        col = t.ap(pattern=[[F, P], [1, 1]], offset=s)") + 1
    assert f"built at slots.py:{built}" in info.value.message


# A 4-d DMA transpose without `axes`: the documented default permutation of a 4-d tile is [3, 1, 2, 0]
TRANSPOSE_4D = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def swap_outer(x):
    A, B, C, D = x.shape
    t = nl.ndarray((D, B, C, A), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(t, x)
    out = nl.ndarray((D, B, C, A), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_a_4d_dma_transpose_defaults_to_the_documented_permutation():
    import ml_dtypes
    x = RNG.standard_normal((16, 2, 3, 8)).astype(ml_dtypes.bfloat16)
    mod = load_kernel(TRANSPOSE_4D, display="swap_outer.py")
    got = simulate(mod.swap_outer, x).outputs[0]
    np.testing.assert_array_equal(got, np.transpose(x, (3, 1, 2, 0)))


# `.ap(..., dtype=)` is the documented reinterpret cast (pattern and offset in elements of the new dtype); writes
# through it, or through `.view(dtype)`, define the tile's bytes
REINTERPRET = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def bits_of(x):
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    out = nl.ndarray((P, F), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t.ap(pattern=[[F, P], [1, F]], offset=0, dtype=nl.int32))
    return out


@nki.jit
def from_bytes(b):
    P, F2 = b.shape
    F = F2 // 2
    t = nl.ndarray((P, F), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=BYTES_VIEW, src=b)
    out = nl.ndarray((P, F), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_an_access_pattern_with_another_dtype_reinterprets_the_bytes():
    import ml_dtypes
    x = RNG.standard_normal((128, 4)).astype(np.float32)
    mod = load_kernel(REINTERPRET.replace("BYTES_VIEW", "t"), display="bits.py")
    np.testing.assert_array_equal(simulate(mod.bits_of, x).outputs[0], x.view(np.int32))
    y = x.astype(ml_dtypes.bfloat16)
    for view in ("t.ap(pattern=[[F2, P], [1, F2]], offset=0, dtype=nl.uint8)", "t.view(nl.uint8)"):
        mod = load_kernel(REINTERPRET.replace("BYTES_VIEW", view), display="bits.py")
        sim = simulate(mod.from_bytes, y.view(np.uint8))
        np.testing.assert_array_equal(sim.outputs[0].view(np.uint16), y.view(np.uint16))
        assert [f.code for f in sim.report.findings] == []


# A plain entry function (a harness, importing no NKI itself) binding an option of a decorated kernel that lives in
# a helper module: it runs in that module's dialect, and the kernel it calls is the top-level kernel
SCALE_KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def scale(x, factor=1.0):
    P, F = x.shape
    t = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(t, t, op0=nl.multiply, operand0=factor)
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''
HARNESS = '''
from .kernels.scale import scale


def doubled(x):
    return scale(x, factor=2.0)
'''


def test_a_plain_entry_calling_a_decorated_kernel_of_a_helper_module(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "scale.py").write_text(SCALE_KERNEL)
    (tmp_path / "entry.py").write_text(HARNESS)
    mod = load_kernel(tmp_path / "entry.py", root=tmp_path)
    x = RNG.standard_normal((128, 8)).astype(np.float32)
    np.testing.assert_array_equal(simulate(mod.doubled, x).outputs[0], 2 * x)
