"""dtype-promotion: low-precision tiles silently widened by Python scalars or mixed dtypes."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import AssignInfo, CallInfo
from evidence.static.shapes import Tensor, promote, promote_scalar

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
_NARROW = ("bfloat16", "float16", "float8_e4m3", "float8_e5m2", "int8", "uint8", "int16", "uint16")
_ARITH = frozenset({"nl.add", "nl.subtract", "nl.multiply", "nl.divide", "nl.maximum", "nl.minimum", "nl.power"})


class DtypePromotion(Rule):
    """Flags arithmetic that widens a narrow tile without saying so: a bf16/fp16/int8 tile
    combined with a Python float/int (weakly typed as fp32/int32), or fp16 with bf16 (-> fp32).

    NKI promotes `fp16_tile + 1.2` to fp32 and `int8_tile + 2` to int32 (REFERENCE §3.8): the
    result takes twice the SBUF and DMA bytes, and downstream matmuls may get fp32 operands at a
    quarter of the TensorE rate.

    Fix: pass `dtype=` to the operation, or use a typed scalar such as `np.float16(1.2)`, or cast
    explicitly where the wider type is intended.

    An operation written straight into an existing tile (`q[...] = nl.multiply(q, scale)`) is not flagged:
    the engines compute in fp32 and the instruction writes its output in the destination's dtype, which the
    author chose (a bf16 `q` stays bf16, no wider tile exists).
    """

    id = "dtype-promotion"
    severity = Severity.low
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        Valid(_HEAD + "def k(a):\n    x = nl.load(a)\n    y = x * 0.5\n", inputs={"a": ((128, 64), "float32")}),
        Valid(_HEAD + "def k(a):\n    x = nl.load(a)\n    y = nl.multiply(x, 0.5, dtype=nl.bfloat16)\n",
              inputs={"a": ((128, 64), "bfloat16")}),
        Valid(_HEAD + "def k(a):\n    x = nl.load(a)\n    x[...] = nl.multiply(x, 0.5)\n    x[...] = x * 2.0\n",
              inputs={"a": ((128, 64), "bfloat16")}),
    ]
    INVALID = [
        Invalid(_HEAD + "def k(a):\n    x = nl.load(a)\n    y = x * 0.5\n", inputs={"a": ((128, 64), "float16")}, line=5),
        _HEAD + "def k(a, b):\n    x = nl.load(a)\n    y = nl.load(b)\n    z = nl.add(x, y)\n",
    ]
    INVALID[1] = Invalid(INVALID[1], inputs={"a": ((128, 64), "float16"), "b": ((128, 64), "bfloat16")})

    def on_assign(self, a: AssignInfo) -> None:
        # `t[...] = <op>`: the op's output is written in t's dtype (what the destination held before)
        if a.kind == "store" and isinstance(a.target_value, Tensor):
            self._into = getattr(self, "_into", {})
            self._into[id(a.value_node)] = a.target_value.dtype

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._check(node, self.ctx.value(node.left), self.ctx.value(node.right), has_dtype=False)

    def on_call(self, call: CallInfo) -> None:
        if call.name in _ARITH:
            left, right = self.ctx.value(call.arg(0, "x")), self.ctx.value(call.arg(1, "y"))
            self._check(call.node, left, right, has_dtype=call.has_kw("dtype"))

    def _check(self, node: cst.CSTNode, left: object, right: object, *, has_dtype: bool) -> None:
        if has_dtype or not (isinstance(left, Tensor) or isinstance(right, Tensor)):
            return
        if getattr(self, "_into", {}).get(id(node)) is not None:
            return  # written straight into an existing tile: its dtype, the author's choice, is the output's
        if isinstance(left, Tensor) and isinstance(right, Tensor):
            if left.dtype in _NARROW and right.dtype in _NARROW:
                out = promote(left.dtype, right.dtype)
                if out not in (left.dtype, right.dtype):
                    self.report(node, f"{left.dtype} combined with {right.dtype} promotes to {out}",
                                labels={"from_dtype": f"{left.dtype}+{right.dtype}", "to_dtype": str(out)})
            return
        t, s = (left, right) if isinstance(left, Tensor) else (right, left)
        if t.dtype in _NARROW and isinstance(s, (int, float)) and not isinstance(s, bool):  # type: ignore[union-attr]
            out = promote_scalar(t.dtype, s)  # type: ignore[union-attr]
            if out != t.dtype:  # type: ignore[union-attr]
                self.report(node, f"{t.dtype} tile combined with a Python {type(s).__name__} promotes to {out}",  # type: ignore[union-attr]
                            labels={"from_dtype": str(t.dtype), "to_dtype": str(out)})  # type: ignore[union-attr]
