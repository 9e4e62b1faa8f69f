"""unstable-variance: variance computed as E[x^2] - E[x]^2 (catastrophic cancellation)."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import AssignInfo, FunctionInfo
from evidence.static.shapes import LOW_PRECISION, Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
_REDUCE = ("nl.sum", "nl.mean")
_PASS = ("nl.copy",)  # keep the role of their operand (a cast keeps the statistic it holds)
_UNARY = ("nl.square", "nl.power", *_REDUCE, *_PASS)  # calls whose role is decided by their first operand
_BINARY = ("nl.multiply", "nl.divide", "nl.subtract")
# Roles of a value with respect to a source x: sq = x*x, m1 = sum/mean of x, m2 = sum/mean of x*x,
# m1sq = (sum/mean of x)^2. A subtraction m2 - m1sq of the same x is the one-pass variance.
_STATS = ("m1", "m2", "m1sq")


class UnstableVariance(Rule):
    """Flags a variance computed as mean(x*x) - mean(x)**2 (or sum-of-squares minus the squared
    sum), instead of the two-pass mean((x - mean)**2) or `nisa.bn_stats`/`nisa.bn_aggr`.

    The difference of two nearly equal numbers loses about log2(mean²/var) significant bits: with
    mean 4 and std 0.5 that is 6 bits, all but 2 of bf16's 8, and the result can even go negative
    so rsqrt(var + eps) returns NaN. In fp32 the same loss leaves ~18 bits, usually enough, so the
    fp32 form is reported at low severity. The BatchNorm statistics instructions compute a stable
    mean and variance on VectorE in one pass (REFERENCE §4, §5.4).

    Fix: subtract the mean first and average the squared deviations in fp32, or use
    `nisa.bn_stats` + `nisa.bn_aggr`; keep the statistics in fp32 either way.
    """

    id = "unstable-variance"
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        # Two-pass variance: mean of squared deviations.
        Valid(_HEAD + "@nki.jit\ndef k(x):\n    t = nl.load(x)\n    m = nl.mean(t, axis=[1], keepdims=True)\n"
              "    c = nl.subtract(t, m)\n    v = nl.mean(nl.square(c), axis=[1], keepdims=True)\n",
              inputs={"x": ((128, 512), "bfloat16")}),
        # RMSNorm: a mean of squares with nothing subtracted.
        Valid(_HEAD + "@nki.jit\ndef k(x):\n    t = nl.load(x)\n    ms = nl.mean(nl.square(t), axis=[1], keepdims=True)\n"
              "    r = nl.rsqrt(ms + 1e-6)\n", inputs={"x": ((128, 512), "float32")}),
        # The squared mean of one tensor subtracted from the mean square of another is not a variance.
        Valid(_HEAD + "@nki.jit\ndef k(x, y):\n    a = nl.load(x)\n    b = nl.load(y)\n"
              "    d = nl.mean(a * a, axis=[1]) - nl.mean(b, axis=[1]) ** 2\n",
              inputs={"x": ((128, 512), "float32"), "y": ((128, 512), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(x):\n    t = nl.load(x)\n    s = nl.sum(t, axis=[1], keepdims=True, dtype=nl.bfloat16)\n"
                "    ss = nl.sum(nl.multiply(t, t), axis=[1], keepdims=True, dtype=nl.bfloat16)\n"
                "    mean = nl.multiply(s, 1.0 / 512, dtype=nl.bfloat16)\n    ex2 = nl.multiply(ss, 1.0 / 512, dtype=nl.bfloat16)\n"
                "    var = nl.subtract(ex2, nl.multiply(mean, mean, dtype=nl.bfloat16), dtype=nl.bfloat16)\n",
                inputs={"x": ((128, 512), "bfloat16")}, line=10),
        Invalid(_HEAD + "@nki.jit\ndef k(x):\n    t = nl.load(x)\n"
                "    r = nl.rsqrt(nl.mean(t * t, axis=[1]) - nl.mean(t, axis=[1]) ** 2 + 1e-5)\n",
                inputs={"x": ((128, 512), "bfloat16")}, line=6),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._roles: dict[str, tuple[str, str]] = {}

    @staticmethod
    def _code(node: cst.CSTNode) -> str:
        """Identity of a source: its name, or (unnamed expression) the node itself, so two inline
        loads never count as the same tile."""
        return node.value if isinstance(node, cst.Name) else f"@{id(node)}"

    def _args(self, node: cst.Call) -> list[cst.BaseExpression]:
        return [a.value for a in node.args if a.keyword is None and not a.star]

    def _role(self, node: cst.BaseExpression) -> tuple[str, str]:
        """(role, source) of an expression; reports a one-pass variance found anywhere inside it. A post-order
        fold over an explicit stack (operands first, left to right): generated code chains thousands deep."""
        roles: dict[int, tuple[str, str]] = {}
        stack: list[tuple[cst.BaseExpression, list | None]] = [(node, None)]
        while stack:
            n, operands = stack.pop()
            if operands is None:
                operands = self._operands(n)
                stack.append((n, operands))
                stack.extend((o, None) for o in reversed(operands))
            else:
                roles[id(n)] = self._combine(n, [roles[id(o)] for o in operands])
        return roles[id(node)]

    def _operands(self, node: cst.BaseExpression) -> list[cst.BaseExpression]:
        """The subexpressions whose roles decide `node`'s (or that are searched for a variance inside it)."""
        if isinstance(node, cst.Call):
            name, args = self.ctx.ev.api_name(node.func) or "", self._args(node)
            if name in _UNARY and args:
                return args[:1] if name != "nl.power" or (len(args) == 2 and _is_two(args[1])) else [
                    a.value for a in node.args]
            if name in _BINARY and len(args) == 2:
                return args
            return [a.value for a in node.args]  # any other call: look inside its arguments
        if isinstance(node, cst.BinaryOperation):
            return [node.left] if isinstance(node.operator, cst.Power) and _is_two(node.right) else [node.left, node.right]
        if isinstance(node, cst.UnaryOperation):
            return [node.expression]
        return []

    def _combine(self, node: cst.BaseExpression, roles: list[tuple[str, str]]) -> tuple[str, str]:
        """`node`'s role from its operands' roles (`_operands`)."""
        if isinstance(node, cst.Name):
            return self._roles.get(node.value, ("val", node.value))
        if isinstance(node, cst.Call):
            name, args = self.ctx.ev.api_name(node.func) or "", self._args(node)
            if name == "nl.square" and args:
                return self._square(roles[0], node)
            if name == "nl.power" and len(args) == 2 and _is_two(args[1]):
                return self._square(roles[0], node)
            if name == "nl.multiply" and len(args) == 2:
                return self._mul(roles[0], roles[1], node)
            if name == "nl.divide" and len(args) == 2:
                return self._scale(roles[0], roles[1], node)
            if name == "nl.subtract" and len(args) == 2:
                return self._sub(roles[0], roles[1], node, args)
            if name in _REDUCE and args:
                return self._reduce(roles[0], node)
            if name in _PASS and args:
                return roles[0]
            return ("val", self._code(node))
        if isinstance(node, cst.BinaryOperation):
            op = node.operator
            if isinstance(op, cst.Power) and _is_two(node.right):
                return self._square(roles[0], node)
            left, right = roles
            if isinstance(op, cst.Multiply):
                return self._mul(left, right, node)
            if isinstance(op, cst.Divide):
                return self._scale(left, right, node)
            if isinstance(op, cst.Subtract):
                return self._sub(left, right, node, [node.left, node.right])
        return ("val", self._code(node))

    def _square(self, r: tuple[str, str], node: cst.CSTNode) -> tuple[str, str]:
        if r[0] == "val":
            return ("sq", r[1])
        if r[0] == "m1":
            return ("m1sq", r[1])
        return ("val", self._code(node))

    def _mul(self, a: tuple[str, str], b: tuple[str, str], node: cst.CSTNode) -> tuple[str, str]:
        if a == b and a[0] in ("val", "m1"):  # x*x, mean*mean
            return self._square(a, node)
        if a[0] == "m1" and b == ("m1", a[1]):
            return ("m1sq", a[1])
        return self._scale(a, b, node) if a[0] in _STATS else self._scale(b, a, node)

    def _scale(self, a: tuple[str, str], k: tuple[str, str], node: cst.CSTNode) -> tuple[str, str]:
        """A statistic times or over a plain value (1/n, a count) is the same statistic."""
        return a if a[0] in _STATS and k[0] == "val" else ("val", self._code(node))

    def _reduce(self, r: tuple[str, str], node: cst.CSTNode) -> tuple[str, str]:
        if r[0] == "sq":
            return ("m2", r[1])
        if r[0] == "val":
            return ("m1", r[1])
        return ("val", self._code(node))

    def _sub(self, a, b, node: cst.CSTNode, operands: list[cst.BaseExpression]) -> tuple[str, str]:
        if not (a[0] == "m2" and b == ("m1sq", a[1])):
            return ("val", self._code(node))
        dtypes = {v.dtype for v in (self.ctx.value(n) for n in [node, *operands]) if isinstance(v, Tensor) and v.dtype}
        low = sorted(dtypes & LOW_PRECISION)
        where = f"in {'/'.join(low)}" if low else "in float32"
        src = "the tile" if a[1].startswith("@") else f"'{a[1]}'"
        self.report(node, f"variance of {src} as E[x^2] - E[x]^2 {where}: cancels catastrophically when "
                          f"|mean| >> std; use the two-pass form or bn_stats/bn_aggr",
                    labels={"source": a[1] if not a[1].startswith("@") else "expression", "dtype": "/".join(low) or "float32"},
                    severity=None if low else Severity.low)
        return ("var", a[1])

    def on_assign(self, assign: AssignInfo) -> None:
        if not isinstance(assign.value, Tensor):  # statistics are tiles; scalars and index math are not
            if assign.target:
                self._roles.pop(assign.target, None)
            return
        role = self._role(assign.value_node)
        if assign.kind == "bind" and assign.target and not assign.subscripted:
            if role[0] == "val":
                self._roles.pop(assign.target, None)
            else:
                self._roles[assign.target] = role

    def leave_function(self, function: FunctionInfo) -> None:
        if function.is_kernel:
            self._roles.clear()


def _is_two(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.value == "2" or isinstance(node, cst.Float) and float(node.value) == 2.0
