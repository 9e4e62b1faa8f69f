"""unfused-activation: scale/shift done separately before an activation function."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import ACTIVATIONS, dst_node, root_name, standalone
from evidence.static.shapes import Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
_SA = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
_AFFINE_CALLS = {"nl.multiply": "multiply", "nl.add": "add", "nl.subtract": "subtract", "nl.divide": "divide",
                 "nisa.tensor_scalar": "tensor_scalar"}
_AFFINE_OPS = {cst.Multiply: "multiply", cst.Add: "add", cst.Subtract: "subtract", cst.Divide: "divide"}
# tensor_scalar ops that activation's `data * scale + bias` can absorb (a clamp, a max or a bitwise op cannot)
_SCALE_BIAS_OPS = frozenset({"multiply", "add", "subtract", "divide"})


class UnfusedActivation(Rule):
    """Flags an activation (`nl.exp`, `nl.tanh`, ..., or `nisa.activation` without scale/bias)
    applied to the result of a separate multiply/add/subtract by a scalar or a [P, 1] vector.

    ScalarE computes `op(data * scale + bias)` in one instruction at the cost of the bare op; the
    separate VectorE/ScalarE instruction doubles the element passes over the tile (about 2x for
    this pair; softmax's `exp(x - max)` is the classic case) (REFERENCE §3.7, §5.3 rule 6).

    In the standalone dialect the separate step is usually a dst-first `nisa.tensor_scalar(dst=t,
    ...)` (or a `tensor_tensor` with a [P, 1] operand) whose `dst` the activation then reads.

    Fix: `nisa.activation(op=nl.exp, data=x, bias=neg_max, scale=s)` with the per-partition
    shift in `bias` (negated) and the factor in `scale`.
    """

    id = "unfused-activation"
    version = "2"  # 2: a tensor_scalar clamp (minimum, maximum) or other op scale/bias cannot absorb is no separate step
    severity = Severity.low
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "def k(a):\n    x = nl.load(a)\n    m = nl.max(x, axis=1, keepdims=True, dtype=nl.float32)\n"
              "    e = nisa.activation(op=nl.exp, data=x, bias=nl.negative(m))\n", inputs={"a": ((128, 512), "float32")}),
        Valid(_HEAD + "def k(a, b):\n    x = nl.load(a)\n    y = nl.load(b)\n    e = nl.exp(nl.add(x, y))\n",
              inputs={"a": ((128, 512), "float32"), "b": ((128, 512), "float32")}),
        Valid(_SA + "def k(a):\n    x = nl.load(a)\n    s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
              "    nisa.tensor_scalar(dst=s, data=x, op0=nl.minimum, operand0=0.0)\n"
              "    e = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
              "    nisa.activation(dst=e, op=nl.exp, data=s)\n", inputs={"a": ((128, 512), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "def k(a):\n    x = nl.load(a)\n    m = nl.max(x, axis=1, keepdims=True, dtype=nl.float32)\n"
                "    s = nl.subtract(x, m)\n    e = nl.exp(s)\n", inputs={"a": ((128, 512), "float32")}, line=8),
        Invalid(_HEAD + "def k(a):\n    x = nl.load(a)\n    e = nl.tanh(x * 0.5)\n", inputs={"a": ((128, 512), "float32")}, line=6),
        Invalid(_SA + "def k(a):\n    x = nl.load(a)\n    s = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
                "    nisa.tensor_scalar(dst=s, data=x, op0=nl.multiply, operand0=0.5)\n"
                "    e = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
                "    nisa.activation(dst=e, op=nl.exp, data=s)\n", inputs={"a": ((128, 512), "float32")}, line=9),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._pending: list[tuple[CallInfo, str, str, int | None]] = []
        # standalone: tile name -> (line, separate op or None) of the dst-first call that last wrote it
        self._writers: dict[str, tuple[int, str | None]] = {}

    def on_call(self, call: CallInfo) -> None:
        dst = dst_node(self.ctx, call)
        sa = standalone(self.ctx)
        if call.name in ACTIVATIONS:
            data = call.arg(0, "x")
        elif call.name == "nisa.activation" and not (call.has_kw("bias") or call.has_kw("scale")):
            data = call.arg(2 if sa else 1, "data")
        else:
            data = None
        writer = None
        if data is not None:
            producer = data
            if isinstance(data, cst.Name):
                writer = self._writers.get(data.value) if sa else None
                b = self.ctx.lookup(data.value)
                producer = b.node if b is not None else None
            op = writer[1] if writer is not None else self._affine(producer)
        if dst is not None and (name := root_name(dst)) is not None:
            self._writers[name] = (call.start, self._dst_first_affine(call))
        if data is None:
            return
        data_t = self.ctx.value(data)
        if not op or (isinstance(data_t, Tensor) and data_t.free_elems == 1):
            return  # nothing to fuse, or a [P, 1] statistic: one element per partition
        if isinstance(data, cst.Name):  # fusable only if nothing else reads it
            self._pending.append((call, data.value, op, writer[0] if writer is not None else None))
        else:
            self._report(call, op)

    def leave_function(self, fn) -> None:
        pending, self._pending = self._pending, []
        self._writers = {}
        for call, name, op, written_at in pending:
            readers = {x.start for x in (*fn.assigns, *fn.calls) if name in x.names} - {written_at}
            if len(readers) <= 1:
                self._report(call, op)

    def _dst_first_affine(self, call: CallInfo) -> str | None:
        """The separate op a standalone `nisa.tensor_scalar` / `tensor_tensor` (by a [P, 1] vector) is."""
        if call.name == "nisa.tensor_scalar":
            return "tensor_scalar" if self._scale_bias(call.node, standalone(self.ctx)) else None
        if call.name == "nisa.tensor_tensor":
            d1, d2 = call.arg(1, "data1"), call.arg(2, "data2")
            if d1 is not None and d2 is not None and self._broadcastable(d1, d2):
                return "tensor_tensor"
        return None

    def _report(self, call: CallInfo, op: str) -> None:
        self.report(call.node, f"{call.name} follows a separate {op} by a scalar/[P,1] vector; fuse it as "
                    "activation scale/bias", metrics={"instructions_saved": 1}, labels={"separate_op": op})

    def _affine(self, node: cst.CSTNode | None) -> str | None:
        if isinstance(node, cst.BinaryOperation) and type(node.operator) in _AFFINE_OPS:
            if self._broadcastable(node.left, node.right):
                return _AFFINE_OPS[type(node.operator)]
        if isinstance(node, cst.Call):
            name = self.ctx.ev.api_name(node.func)
            if name in _AFFINE_CALLS and len(node.args) >= 2:
                if name == "nisa.tensor_scalar":
                    return "tensor_scalar" if self._scale_bias(node, False) else None
                if self._broadcastable(node.args[0].value, node.args[1].value):
                    return _AFFINE_CALLS[name]
        return None

    def _scale_bias(self, node: cst.Call, dst_first: bool) -> bool:
        """Whether a tensor_scalar's op0 (and op1, if given) are ops activation's scale and bias absorb; an op
        the analysis cannot name is not assumed to be one."""
        shift = 1 if dst_first else 0
        for index, keyword in ((1 + shift, "op0"), (4 + shift, "op1")):
            op = _arg(node, index, keyword)
            if op is None and keyword == "op1":
                continue
            name = self.ctx.ev.api_name(op) if isinstance(op, (cst.Name, cst.Attribute)) else None
            if name is None or name.rsplit(".", 1)[-1] not in _SCALE_BIAS_OPS:
                return False
        return True

    def _broadcastable(self, left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
        lv, rv = self.ctx.value(left), self.ctx.value(right)
        if isinstance(lv, Tensor) == isinstance(rv, Tensor):
            return isinstance(lv, Tensor) and _is_vector(rv) and not _is_vector(lv)
        other = rv if isinstance(lv, Tensor) else lv
        return isinstance(other, (int, float)) or _is_vector(other)


def _arg(node: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
    """The argument of `node` passed as `keyword` or at positional `index` (None: not given)."""
    for a in node.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    return positional[index] if index < len(positional) else None


def _is_vector(v: object) -> bool:
    return isinstance(v, Tensor) and v.shape is not None and (len(v.shape) == 1 or v.shape[-1] == 1)
