"""low-precision-accumulator: accumulators or softmax statistics kept in bf16/fp16."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import AssignInfo, CallInfo
from evidence.static.shapes import LOW_PRECISION, REDUCE_CALLS, Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"


class LowPrecisionAccumulator(Rule):
    """Flags running accumulators (`+=` or `x = x + ...` in a loop, PSUM accumulators) and
    reductions (sum/max/mean statistics) whose dtype is bf16/fp16/fp8.

    bf16 keeps 8 significant bits: a sum of K terms in bf16 loses about log2(K) bits more than
    fp32, and a bf16 fill of fp32.min becomes -inf so `max - max` turns into NaN. TensorE
    accumulates in fp32 PSUM for this reason; softmax/norm statistics belong in fp32
    (REFERENCE §4, §5.4).

    Fix: allocate accumulators as nl.float32 (PSUM or SBUF) and pass `dtype=nl.float32` to
    reductions; cast once at the end.
    """

    id = "low-precision-accumulator"
    severity = Severity.high
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        Valid(_HEAD + "def k(a):\n    x = nl.load(a)\n    s = nl.sum(x, axis=1, dtype=nl.float32)\n",
              inputs={"a": ((128, 512), "bfloat16")}),
        _HEAD + "acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)\nfor k in nl.affine_range(4):\n    acc += x\n",
    ]
    INVALID = [
        Invalid(_HEAD + "def k(a):\n    x = nl.load(a)\n    m = nl.max(x, axis=1)\n", inputs={"a": ((128, 512), "bfloat16")}, line=5),
        Invalid(_HEAD + "acc = nl.zeros((128, 512), nl.bfloat16)\nfor k in nl.affine_range(4):\n    acc += x\n", line=5),
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name not in REDUCE_CALLS:
            return
        t = call.tensor
        if t is not None and t.dtype in LOW_PRECISION:
            self.report(call.node, f"{call.name} produces a {t.dtype} statistic; keep reductions in float32",
                        labels={"dtype": t.dtype, "role": "statistic"})

    def on_assign(self, a: AssignInfo) -> None:
        if not a.loops or a.target is None:
            return
        accumulating = a.kind == "aug" or (a.kind == "bind" and a.target in a.names and _is_sum(a))
        t = a.target_value
        if accumulating and isinstance(t, Tensor) and t.dtype in LOW_PRECISION:
            self.report(a.node, f"'{a.target}' accumulates in {t.dtype} across loop iterations",
                        labels={"dtype": t.dtype, "role": "accumulator"},
                        metrics={"trip_count": a.loops[-1].trip})


def _is_sum(a: AssignInfo) -> bool:
    import libcst as cst

    v = a.value_node
    return isinstance(v, cst.BinaryOperation) and isinstance(v.operator, cst.Add)
