"""Helper functions of the kernel file see what their callers pass (evidence.static.helper_args):
a dtype that reaches a helper through a parameter is followed, in both dialects and through a
helper of a helper; callers that disagree leave it unknown."""

from __future__ import annotations

from evidence.static.engine import analyze
from evidence.static.model import InputBinding

BETA = """import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def inv_norm(tile):
    sumsq = nl.ndarray((tile.shape[0], 1), dtype=tile.dtype, buffer=nl.sbuf)
    nisa.activation_reduce(op=nl.square, data=tile, reduce_op=np.add, reduce_res=sumsq, dtype=tile.dtype)  # <-
    return nisa.activation(op=nl.rsqrt, data=sumsq, dtype=nl.float32)


{middle}
@nki.jit
def kernel(x{params}):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(x.shape[0] // 128):
        tile = nl.load(x[t * 128:(t + 1) * 128, :])
        inv = {call}
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.multiply(tile, inv))
    return out
"""


def _accumulator_lines(source: str, **dtypes: str) -> list[int]:
    inputs = [InputBinding(n, (256, 512), d) for n, d in dtypes.items()]
    a = analyze(source, inputs=inputs, entry="kernel")
    return [f.start for f in a.findings if f.rule == "low-precision-accumulator"]


def _line(source: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if line.endswith("# <-"))


def test_a_bf16_statistic_whose_dtype_comes_through_a_helper_parameter_is_found_at_the_helper():
    # audit item l2norm-bf16-sumsq: the sum of squares took the tile's dtype inside the helper
    src = BETA.format(middle="", params="", call="inv_norm(tile)")
    assert _accumulator_lines(src, x="bfloat16") == [_line(src)]
    assert _accumulator_lines(src, x="float32") == []


def test_a_helper_of_a_helper_is_followed():
    middle = "def scale_of(t):\n    return inv_norm(t)\n\n"
    src = BETA.format(middle=middle, params="", call="scale_of(tile)")
    assert _accumulator_lines(src, x="bfloat16") == [_line(src)]


def test_callers_passing_different_dtypes_leave_the_parameter_unknown():
    src = BETA.format(middle="", params=", y", call="inv_norm(tile)\n        other = inv_norm(nl.load(y[0:128, :]))")
    assert _accumulator_lines(src, x="bfloat16", y="float32") == []
    assert _accumulator_lines(src, x="bfloat16", y="bfloat16") == [_line(src)]


def test_the_standalone_dialect_follows_helper_parameters_too():
    src = """import nki
import nki.isa as nisa
import nki.language as nl


def row_sumsq(tile, res):
    nisa.activation_reduce(dst=tile, op=nl.square, data=tile, reduce_op=nl.add, reduce_res=res)  # <-


@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:128, :])
    s = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.sbuf)
    row_sumsq(t, s)
    nisa.dma_copy(dst=out[0:128, :], src=t)
    return out
"""
    assert _accumulator_lines(src, x="bfloat16") == [_line(src)]
    assert _accumulator_lines(src, x="float32") == []
