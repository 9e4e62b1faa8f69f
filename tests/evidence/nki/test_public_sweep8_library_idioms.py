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
