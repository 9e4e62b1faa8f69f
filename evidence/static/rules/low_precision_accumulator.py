"""low-precision-accumulator: accumulators, partial sums or statistics kept in bf16/fp16/fp8."""

from __future__ import annotations

import math

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import AssignInfo, CallInfo
from evidence.static.shapes import LOW_PRECISION, REDUCE_CALLS, Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\nimport numpy as np\n"
_SA_HEAD = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
# Calls whose result is a statistic or a running total: every reduction-like instruction.
STAT_CALLS = REDUCE_CALLS | {"nisa.bn_stats", "nisa.bn_aggr", "nisa.tensor_partition_reduce", "nisa.tensor_tensor_scan"}
# Calls that write a reduction into a destination operand.
REDUCE_RES_CALLS = frozenset({"nisa.activation_reduce", "nisa.tensor_scalar_reduce", "nisa.activation"})
_ADD_CALLS = frozenset({"nl.add", "nisa.tensor_tensor"})
_ADD_OPS = frozenset({"np.add", "nl.add", "numpy.add"})
# A max or min selects one of its inputs: in the inputs' own dtype it is exact, however narrow.
_SELECT_REDUCTIONS = frozenset({"nl.max", "nl.min"})
_SELECT_OPS = frozenset({"nl.max", "nl.min", "nl.maximum", "nl.minimum", "np.max", "np.min", "np.maximum",
                         "np.minimum", "np.amax", "np.amin", "numpy.max", "numpy.min", "numpy.maximum", "numpy.minimum"})


def accumulation_severity(steps: int | None) -> Severity:
    """A bf16 running sum re-rounds once per step: two steps cost about one extra output rounding
    (minor); the error grows with the step count, so eight or more is a defect."""
    if steps is not None and steps <= 2:
        return Severity.low
    if steps is not None and steps <= 4:
        return Severity.medium
    return Severity.high


class LowPrecisionAccumulator(Rule):
    """Flags running accumulators and statistics whose dtype is bf16/fp16/fp8: sums carried across
    loop iterations (`acc += part`, `acc = acc + part`, `acc[...] = nl.add(acc, part, dtype=...)`,
    `nisa.tensor_tensor(acc, part, np.add)`), and the results of every reduction-like instruction
    (`nl.sum`/`max`/`mean`/`var`, `nisa.tensor_reduce`, `bn_stats`/`bn_aggr`, `tensor_partition_reduce`,
    `tensor_tensor_scan`, the `reduce_res` of `activation_reduce`/`tensor_scalar_reduce`), including
    a statistic stored into a low-precision buffer.

    bf16 keeps 8 significant bits: a running sum re-rounded at every step loses about log2(steps)
    bits more than fp32, and norm statistics in bf16 shift every normalised value; a bf16 fill of
    fp32.min becomes -inf so `max - max` turns into NaN. TensorE accumulates in fp32 PSUM for this
    reason, and VectorE computes reductions in fp32 internally, so keeping them narrow saves nothing
    (REFERENCE §4, §5.4). Severity follows the number of accumulation steps: 2 re-roundings are
    minor (low), 3-4 medium, more (or an unknown count) high; statistics are high.

    Fix: allocate accumulators as nl.float32 (in PSUM for matmul partial sums: `acc += nc_matmul(...)`)
    and pass `dtype=nl.float32` to reductions and statistics; cast once at the end.
    """

    id = "low-precision-accumulator"
    version = "2"
    severity = Severity.high
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        Valid(_HEAD + "def k(a):\n    x = nl.load(a)\n    s = nl.sum(x, axis=1, dtype=nl.float32)\n",
              inputs={"a": ((128, 512), "bfloat16")}),
        _HEAD + "acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)\nfor k in nl.affine_range(4):\n    acc += x\n",
        # fp32 statistics from bf16 data, in an fp32 buffer
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    st = nl.ndarray((128, 12), dtype=nl.float32)\n"
              "    for c in nl.affine_range(2):\n        st[:, 6 * c:6 * (c + 1)] = nisa.bn_stats(x[:, c * 512:(c + 1) * 512], "
              "dtype=nl.float32)\n    mv = nisa.bn_aggr(st, dtype=nl.float32)\n", inputs={"a": ((128, 1024), "bfloat16")}),
        # one block of partial sums added once onto a bf16 zero tile (K fits one block): no running sum
        Valid(_HEAD + "@nki.jit\ndef k(a, b):\n    K = a.shape[0]\n    acc = nl.zeros((128, 512), nl.bfloat16)\n"
              "    for kb in nl.sequential_range(K // 1024):\n        part = nl.zeros((128, 512), nl.float32, buffer=nl.psum)\n"
              "        for k in nl.affine_range(8):\n"
              "            part += nl.matmul(a[kb * 1024 + k * 128:kb * 1024 + (k + 1) * 128, 0:128], b, transpose_x=True)\n"
              "        acc += part\n", inputs={"a": ((1024, 128), "bfloat16"), "b": ((128, 512), "bfloat16")}),
        # a bf16 temporary rebuilt in each iteration is not carried across iterations
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(8):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n"
              "        x = x + x\n", inputs={"a": ((1024, 64), "bfloat16")}),
        # each iteration writes its own slice: not an accumulation
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    acc = nl.zeros((128, 512), nl.bfloat16)\n    x = nl.load(a)\n"
              "    for j in nl.affine_range(4):\n        acc[:, j * 128:(j + 1) * 128] = nl.add(acc[:, j * 128:(j + 1) * 128], x)\n",
              inputs={"a": ((128, 128), "bfloat16")}),
        # a running max is exact in any dtype
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    m = nl.zeros((128, 64), nl.bfloat16)\n    for i in nl.affine_range(8):\n"
              "        x = nl.load(a[i * 128:(i + 1) * 128, :])\n        m = nl.maximum(m, x)\n",
              inputs={"a": ((1024, 64), "bfloat16")}),
        Valid(_SA_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    st = nl.ndarray((128, 6), dtype=nl.float32)\n"
              "    nisa.bn_stats(dst=st, data=x)\n", inputs={"a": ((128, 512), "bfloat16")}),
        # a max or min of bf16 values is one of them: exact in bf16 (online softmax / log-sum-exp running max)
        Valid(_HEAD + "def k(a):\n    x = nl.load(a)\n    m = nl.max(x, axis=1)\n", inputs={"a": ((128, 512), "bfloat16")}),
        Valid(_SA_HEAD + "@nki.jit\ndef k(a):\n    x = nl.ndarray((128, 512), dtype=nl.bfloat16, buffer=nl.sbuf)\n"
              "    nisa.dma_copy(dst=x, src=a)\n    m = nl.ndarray((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)\n"
              "    nisa.tensor_reduce(dst=m, op=nl.maximum, data=x, axis=1)\n", inputs={"a": ((128, 512), "bfloat16")}),
    ]
    INVALID = [
        Invalid(_HEAD + "def k(a):\n    x = nl.load(a)\n    m = nl.sum(x, axis=1)\n", inputs={"a": ((128, 512), "bfloat16")}, line=7),
        # a max of fp32 values narrowed into a bf16 statistic
        Invalid(_SA_HEAD + "@nki.jit\ndef k(a):\n    x = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
                "    nisa.dma_copy(dst=x, src=a)\n    m = nl.ndarray((128, 1), dtype=nl.bfloat16, buffer=nl.sbuf)\n"
                "    nisa.tensor_reduce(m, nl.maximum, x, axis=1)\n", inputs={"a": ((128, 512), "float32")}, line=9),
        Invalid(_HEAD + "acc = nl.zeros((128, 512), nl.bfloat16)\nfor k in nl.affine_range(16):\n    acc += x\n", line=7),
        # bn_stats/bn_aggr statistics in bf16
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    st = nl.ndarray((128, 6), dtype=nl.bfloat16)\n"
                "    st[...] = nisa.bn_stats(x, dtype=nl.bfloat16)\n    mv = nisa.bn_aggr(st)\n",
                inputs={"a": ((128, 512), "bfloat16")}, line=9),
        # an fp32 statistic stored into a bf16 buffer is narrowed there
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    st = nl.ndarray((128, 6), dtype=nl.bfloat16)\n"
                "    st[...] = nisa.bn_stats(x, dtype=nl.float32)\n", inputs={"a": ((128, 512), "float32")}, line=9),
        # the reduce_res of activation_reduce in bf16
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    s = nl.ndarray((128, 1), dtype=nl.bfloat16)\n"
                "    e = nisa.activation_reduce(op=nl.exp, data=x, reduce_op=np.add, reduce_res=s, dtype=nl.float32)\n",
                inputs={"a": ((128, 512), "float32")}, line=9),
        Invalid(_HEAD + "@nki.jit\ndef k(a, o):\n    x = nl.load(a)\n    p = nisa.tensor_partition_reduce(np.add, data=x)\n",
                inputs={"a": ((128, 512), "bfloat16"), "o": ((1, 512), "bfloat16")}, line=8),
        # matmul partial sums evicted and summed in bf16 on VectorE, over 8 K blocks
        Invalid(_HEAD + "@nki.jit\ndef k(a, b):\n    acc = nl.zeros((128, 512), dtype=nl.bfloat16)\n"
                "    for k in nl.sequential_range(8):\n        p = nisa.nc_matmul(a[k], b[k])\n"
                "        acc[...] = nisa.tensor_tensor(acc, p, np.add, dtype=nl.bfloat16)\n",
                inputs={"a": ((8, 128, 128), "bfloat16"), "b": ((8, 128, 512), "bfloat16")}, line=10),
        # an fp32 accumulator re-rounded to bf16 by the add's own dtype
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    acc = nl.zeros((128, 64), dtype=nl.float32)\n"
                "    for i in nl.affine_range(64):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n"
                "        acc[...] = nl.add(acc, x, dtype=nl.bfloat16)\n", inputs={"a": ((8192, 64), "bfloat16")}, line=10),
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    acc = nl.zeros((128, 64), dtype=nl.bfloat16)\n"
                "    for i in nl.affine_range(16):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n"
                "        acc = acc + x\n", inputs={"a": ((2048, 64), "bfloat16")}, line=10),
        Invalid(_SA_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    st = nl.ndarray((128, 6), dtype=nl.bfloat16)\n"
                "    nisa.bn_stats(dst=st, data=x)\n", inputs={"a": ((128, 512), "bfloat16")}, line=8),
    ]

    # -- statistics -------------------------------------------------------------------------
    def on_call(self, call: CallInfo) -> None:
        standalone = self.ctx.dialect.dialect == STANDALONE
        if call.name in REDUCE_RES_CALLS and call.has_kw("reduce_res"):
            t = self.ctx.value(call.arg(None, "reduce_res"))
            where = "its reduce_res"
        elif call.name in STAT_CALLS:
            t = self.ctx.value(call.arg(0, "dst")) if standalone and call.name.startswith("nisa.") else call.tensor
            where = "a statistic"
        else:
            return
        if isinstance(t, Tensor) and t.dtype in LOW_PRECISION and not self._exact_selection(call, t.dtype, standalone):
            self._statistic(call.node, call.name, t.dtype, where)

    def _exact_selection(self, call: CallInfo, dtype: str, standalone: bool) -> bool:
        """A max/min reduction whose input is in the result's dtype (or of unknown dtype: no sure narrowing)."""
        if call.name in _SELECT_REDUCTIONS:
            data = call.arg(0, "x")
        elif call.name == "nisa.tensor_reduce":
            op = call.arg(1 if standalone else 0, "op")
            if op is None or self.ctx.ev.api_name(op) not in _SELECT_OPS:
                return False
            data = call.arg(2 if standalone else 1, "data")
        else:
            return False
        x = self.ctx.value(data) if data is not None else None
        return not isinstance(x, Tensor) or x.dtype == dtype

    def _statistic(self, node: cst.CSTNode, name: str, dtype: str, where: str) -> None:
        self.report(node, f"{name} produces {where} in {dtype}; keep reductions and statistics in float32",
                    labels={"dtype": dtype, "role": "statistic", "op": name})

    # -- accumulators -----------------------------------------------------------------------
    def on_assign(self, a: AssignInfo) -> None:
        if a.target is None:
            return
        if a.kind == "store" and isinstance(a.value_node, cst.Call):  # stats[...] = nisa.bn_stats(...)
            name = self.ctx.ev.api_name(a.value_node.func)
            t = a.target_value
            if name in STAT_CALLS and isinstance(t, Tensor) and t.dtype in LOW_PRECISION:
                self._statistic(a.node, name, t.dtype, "a statistic stored")
                return
        if not a.loops or not (a.kind == "aug" or (a.target in a.names and self._is_sum(a.value_node, a.target))):
            return
        loops = [lp for lp in a.loops if lp.id not in (a.target_def_loops or ()) and lp.id not in a.index_deps]
        if not loops:  # rebuilt in every iteration, or each iteration writes its own slice
            return
        dtype = _narrowest(a.target_value, a.value if a.kind != "aug" else None)
        if dtype is None:
            return
        steps = None if any(lp.trip is None for lp in loops) else math.prod(lp.trip for lp in loops)
        if steps == 1:  # one addition onto the initial value rounds once, like the final store's cast
            return
        role = "partial_sums" if self._adds_matmul(a.value_node) else "accumulator"
        what = "matmul partial sums are summed" if role == "partial_sums" else f"'{a.target}' accumulates"
        self.report(a.node, f"{what} in {dtype} across {steps if steps is not None else 'many'} loop iterations",
                    labels={"dtype": dtype, "role": role}, metrics={"accumulation_steps": steps},
                    severity=accumulation_severity(steps))

    def _is_sum(self, node: cst.BaseExpression, target: str) -> bool:
        """`target + part`, `nl.add(target, part)` or `nisa.tensor_tensor(target, part, np.add)`."""
        if isinstance(node, cst.BinaryOperation):
            return isinstance(node.operator, cst.Add)
        if not isinstance(node, cst.Call):
            return False
        name = self.ctx.ev.api_name(node.func)
        if name == "nl.add":
            return True
        if name == "nisa.tensor_tensor":
            op = next((x.value for x in node.args if x.keyword is not None and x.keyword.value == "op"), None)
            positional = [x.value for x in node.args if x.keyword is None]
            op = op if op is not None else (positional[2] if len(positional) > 2 else None)
            return op is not None and self.ctx.ev.api_name(op) in _ADD_OPS
        return False

    def _adds_matmul(self, node: cst.BaseExpression) -> bool:
        """Is one operand of the sum a matmul result (a PSUM tile evicted into the sum)?"""
        operands = [node.left, node.right] if isinstance(node, cst.BinaryOperation) else (
            [x.value for x in node.args[:2]] if isinstance(node, cst.Call) else [node])
        for operand in operands:
            v = self.ctx.value(operand)
            if isinstance(v, Tensor) and (v.origin == "matmul" or v.buffer == "psum"):
                return True
        return False


def _narrowest(target: object, value: object) -> str | None:
    """The low-precision dtype the running sum is rounded to (the target's, or the sum's own)."""
    for t in (value, target):
        if isinstance(t, Tensor) and t.dtype in LOW_PRECISION:
            return t.dtype
    return None
