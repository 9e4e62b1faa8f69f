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

