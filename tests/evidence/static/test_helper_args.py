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


def test_a_call_that_omits_a_parameter_passes_its_default():
    import libcst as cst

    from evidence.static.helper_args import call_arguments, hints, top_level_defaults

    module = cst.parse_module("def h(t, flag=False, n=4):\n    pass\n")
    defaults = top_level_defaults(module)["h"]
    value = {"x": "tile", "False": False, "True": True, "4": 4}.get

    def args(call: str) -> dict[str, object]:
        node = cst.parse_expression(call)
        return call_arguments(node, ("t", "flag", "n"), lambda e: value(cst.Module([]).code_for_node(e)), defaults)

    assert args("h(x)") == {"t": "tile", "flag": False, "n": 4}
    assert args("h(x, True)") == {"t": "tile", "flag": True, "n": 4}
    assert args("h(*xs)") == {}  # positions after a *args are unknown: no default is assumed
    assert hints({"h": [args("h(x)"), args("h(x, flag=True)")]}) == {"h": {"t": "tile", "n": 4}}
    assert hints({"h": [{}]}) == {"h": {}}  # a called helper keeps its key: the file calls it


def test_a_trace_helper_parameter_is_a_tile_only_when_used_as_one():
    import libcst as cst

    from evidence.static.helper_args import tile_params

    fn = cst.parse_module(
        "def h(a, b, c, d, e, flag, n, dt):\n"
        "    if flag:\n        a[...] = nl.exp(b)\n"
        "    x = nl.ndarray((n, c.shape[1]), dtype=dt)\n"
        "    y = nl.multiply(x, n)\n"
        "    nisa.activation(op=nl.exp, data=d, dtype=dt)\n"
        "    z = nl.ds(n, 128)\n"
        "    w = nl.zeros_like(e)\n"
    ).body[0]
    api = {"nl": "nl", "nisa": "nisa"}

    def api_name(func):
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in api:
            return f"{api[func.value.value]}.{func.attr.value}"
        return None

    assert tile_params(fn, ("a", "b", "c", "d", "e", "flag", "n", "dt"), api_name) == {"a", "b", "c", "d", "e"}
