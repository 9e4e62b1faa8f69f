"""Python conditions the task's values decide (sweep 6, a flash attention backward pass):

- `acc_dtype = np.float32 if fp32_stats else x.dtype` with the default True is fp32, so a reduction
  in `acc_dtype` is no low-precision statistic; an undecided condition gives an unknown dtype,
  not the bf16 branch;
- code under `if drop > 0.0:` with the default 0.0 is never traced: no rule reports it, and a
  helper call there passes nothing to the helper.
"""

from __future__ import annotations

import libcst as cst
import pytest

from evidence.static.conditions import decide
from evidence.static.engine import analyze
from evidence.static.model import InputBinding
from evidence.static.shapes import Dtype

HEAD = """import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
"""

X = [InputBinding("x", (512, 128), "bfloat16")]


def _findings(source: str, rule: str | None = None, inputs=X):
    a = analyze(source, inputs=inputs, entry="kernel")
    assert not a.failures, a.failures
    return [f for f in a.findings if rule is None or f.rule == rule]


def _line(source: str, marker: str = "# <-") -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if line.rstrip().endswith(marker))


# -- a conditional expression picks its dtype -------------------------------------------------

ROW_SUMS = HEAD + """
@nki.jit(mode='trace')
def row_sums(sums, x_tile, n_tiles):
    acc_dtype = sums.dtype
    for j in nl.affine_range(n_tiles):
        t = nl.load(x_tile[j * 128:(j + 1) * 128, :], dtype=acc_dtype)
        sq = nl.multiply(t, t, dtype=acc_dtype)
        sums[j, :, 0] = nisa.tensor_reduce(np.add, data=sq, axis=(1,), dtype=acc_dtype)  # <-


@nki.jit
def kernel(x, {flag}):
    acc_dtype = np.dtype(np.float32) if fp32_stats else x.dtype
    sums = nl.ndarray((4, nl.par_dim(128), 1), dtype=acc_dtype)
    row_sums(sums, x, 4)
    out = nl.ndarray((128, 1), dtype=np.float32, buffer=nl.shared_hbm)
    nl.store(out, sums[0])
    return out
"""


def test_a_conditional_dtype_on_a_default_true_flag_is_the_fp32_branch():
    assert _findings(ROW_SUMS.format(flag="fp32_stats=True"), "low-precision-accumulator") == []


def test_a_conditional_dtype_on_a_default_false_flag_is_still_the_bf16_branch():
    src = ROW_SUMS.format(flag="fp32_stats=False")
    assert [f.start for f in _findings(src, "low-precision-accumulator")] == [_line(src)]


def test_the_tasks_value_overrides_the_default_of_the_condition():
    src = ROW_SUMS.format(flag="fp32_stats=True")
    inputs = X + [InputBinding("fp32_stats", value=False)]
    assert [f.start for f in _findings(src, "low-precision-accumulator", inputs)] == [_line(src)]


def test_an_undecided_conditional_dtype_is_unknown_not_the_low_precision_branch():
    # no default and not passed by the task: the flag's value is unknown
    assert _findings(ROW_SUMS.format(flag="fp32_stats"), "low-precision-accumulator") == []


# -- code in a branch the task's values rule out ---------------------------------------------

DROPOUT = HEAD + """
@nki.jit(mode='trace')
def attend(t, drop, use_bias):
    if {cond}:
        y = nl.multiply(t, 1.5)  # <- dtype-promotion when traced
        s = nl.sum(t, axis=1)  # <- low-precision-accumulator when traced
        return y
    return t


@nki.jit
def kernel(x, drop=0.0, use_bias=False):
    out = nl.ndarray((512, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        if {cond}:
            u = nl.multiply(t, 2.0)  # <- dtype-promotion when traced
        nl.store(out[i * 128:(i + 1) * 128, :], attend(t, drop, use_bias))
    return out
"""

DEAD_AT_DEFAULTS = [
    "drop > 0.0", "drop != 0.0", "not drop == 0.0", "0.0 < drop <= 1.0", "drop >= 0.5 or use_bias",
    "use_bias and drop < 1.0", "not (drop <= 0.0)",
]


@pytest.mark.parametrize("cond", DEAD_AT_DEFAULTS)
def test_no_rule_reports_code_under_a_comparison_the_defaults_rule_out(cond):
    src = DROPOUT.format(cond=cond)
    marked = {i for i, line in enumerate(src.splitlines(), 1) if "# <-" in line}
    assert [f for f in _findings(src) if f.start in marked] == []


@pytest.mark.parametrize("cond", ["drop > 0.0", "drop != 0.0", "0.0 < drop <= 1.0", "drop >= 0.5 or use_bias"])
def test_the_same_code_is_reported_when_the_task_enables_the_branch(cond):
    src = DROPOUT.format(cond=cond)
    marked = {i for i, line in enumerate(src.splitlines(), 1) if "# <-" in line}
    found = _findings(src, inputs=X + [InputBinding("drop", value=0.5)])
    assert {(f.rule, f.start) for f in found if f.start in marked} == {
        ("dtype-promotion", i) for i in marked if "dtype-promotion" in src.splitlines()[i - 1]
    } | {("low-precision-accumulator", i) for i in marked if "low-precision" in src.splitlines()[i - 1]}


def test_a_helper_called_only_from_a_ruled_out_branch_takes_nothing_from_that_call():
    # never traced: its body must not be judged with the tile the dead call would pass
    src = HEAD + """
@nki.jit(mode='trace')
def rescale(t, drop):
    return nl.multiply(t, 1.0 / (1.0 - drop))


@nki.jit
def kernel(x, drop=0.0):
    out = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.load(x[0:128, :])
    if drop > 0.0:
        t = rescale(t, drop)
    nl.store(out, t)
    return out
"""
    assert _findings(src, "dtype-promotion") == []
    assert len(_findings(src, "dtype-promotion", X + [InputBinding("drop", value=0.5)])) == 1


def test_a_flag_a_loop_rebinds_decides_nothing():
    # an unrolled loop traces the else branch from its second iteration on
    src = HEAD + """
@nki.jit
def kernel(x):
    out = nl.ndarray((128, 128), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    first = True
    for i in nl.static_range(4):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        if first:
            first = False
        else:
            t = nl.multiply(t, 2.0)  # <-
        nl.store(out, t)
    return out
"""
    assert [f.start for f in _findings(src, "dtype-promotion")] == [_line(src)]


# -- decide ---------------------------------------------------------------------------------

VALUES = {"p": 0.0, "n": 4, "on": True, "off": False, "bf16": Dtype("bfloat16"), "fp32": Dtype("float32")}


@pytest.mark.parametrize(("test", "expected"), [
    ("p > 0.0", False), ("p >= 0.0", True), ("n < 8", True), ("n <= 3", False), ("n == 4", True),
    ("n != 4", False), ("0 < n < 8", True), ("0 < n < 2", False), ("not p", True), ("off or n == 4", True),
    ("on and p > 0", False), ("bf16 == fp32", False), ("bf16 != fp32", True), ("on == True", True),
    # unknown values decide nothing
    ("tile > 0", None), ("p > 0 or tile", None), ("on and tile", None), ("tile == None", None),
    ("bf16 < fp32", None), ("off and tile", False),
])
def test_decide(test, expected):
    def value(node):
        if isinstance(node, cst.Name):
            return VALUES.get(node.value, node.value == "True" if node.value in ("True", "False") else None)
        if isinstance(node, (cst.Integer, cst.Float)):
            return node.evaluated_value
        return None

    assert decide(cst.parse_expression(test), value) is expected
