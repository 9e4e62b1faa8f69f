"""Semantics the seventh public-kernel sweep found mishandled, each on a kernel written for the test."""

from __future__ import annotations

import numpy as np

from evidence.nki import load_kernel, simulate

RNG = np.random.default_rng(71)

# A ragged tile loaded under a mask (its last partitions never written), transposed on TensorE in transpose
# mode against an identity, transposed back, and stored under the same mask: each valid row only ever meets
# its own elements.
RAGGED_TRANSPOSE = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def ragged_roundtrip(x):
    n, f = x.shape
    out = nl.ndarray((n, f), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:128]
    eye = nl.shared_constant(np.identity(128, dtype=np.int8), dtype=x.dtype)
    ident = nl.load(eye)
    t = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    t[ip, jf] = nl.load(x[ip, jf], mask=ip < n)
    tt = nl.copy(nisa.nc_matmul(t, ident, is_transpose=True), dtype=x.dtype)
    back = nl.copy(nisa.nc_matmul(tt, ident, is_transpose=True), dtype=x.dtype)
    nl.store(out[ip, jf], value=nl.multiply(back, 2.0), mask=ip < n)
    return out
'''


def test_transpose_mode_keeps_undefined_partitions_in_place_on_v3():
    # NeuronCore-v3 transposes bit-exactly (NaN/Inf stay where they are): the unwritten partitions of the ragged
    # tile must not reach the valid rows; on v2 the transpose is a matmul with the identity and they do
    mod = load_kernel(RAGGED_TRANSPOSE, display="ragged.py")
    x = RNG.standard_normal((72, 128)).astype(np.float32)
    got = simulate(mod.ragged_roundtrip, x, target="trn2").outputs[0]
    np.testing.assert_array_equal(got, 2 * x)
    v2 = simulate(mod.ragged_roundtrip, x, target="trn1").outputs[0]
    assert np.isnan(v2).all()


# neuronx-cc's numpy bfloat16 scalar type, imported by name from the compiler package (nki-samples' kernels and tests)
STARFISH_BF16 = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.starfish.support.dtype import bfloat16


@nki.jit
def halve(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, nl.multiply(t, np.asarray(0.5, dtype=bfloat16), dtype=x.dtype))
    return out
'''


def test_starfish_bfloat16_import_is_the_numpy_bfloat16_type():
    mod = load_kernel(STARFISH_BF16, display="halve.py")
    x = RNG.standard_normal((128, 64)).astype(np.float32)
    got = simulate(mod.halve, x).outputs[0]
    np.testing.assert_array_equal(got, x * 0.5)
