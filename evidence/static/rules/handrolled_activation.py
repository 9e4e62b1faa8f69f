"""handrolled-activation: SiLU, GELU, sigmoid or softplus built from exp/add/reciprocal/multiply."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import AssignInfo, CallInfo, FunctionInfo

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\nimport numpy as np\n"
_SA_HEAD = "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
_INPUTS = {"a": ((128, 512), "float32")}

# A term is ("var", name) | ("const", value) | (op, *terms); lines: the source lines of its instructions.
_BINOPS = {cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div", cst.Power: "pow"}
_FUNCS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "power": "pow", "negative": "neg",
    "exp": "exp", "tanh": "tanh", "reciprocal": "recip", "sigmoid": "sigmoid", "erf": "erf", "log": "log",
    "square": "square", "copy": "copy", "tensor_copy": "copy",
}
# Built-ins a chain should be replaced by (nl.* functions, or nisa.activation(op=nl.<name>)).
_BUILTIN = {"silu": "nl.silu", "gelu": "nl.gelu (or nl.gelu_apprx_tanh)", "sigmoid": "nl.sigmoid", "softplus": "nl.softplus"}
_MAX_DEPTH = 12
_COMPOSITE = ("activation", "tensor_scalar", "tensor_tensor", "scalar_tensor_tensor")


def _api_tail(name: str | None) -> str | None:
    return name.rsplit(".", 1)[-1] if name else None


class HandrolledActivation(Rule):
    """Flags activation functions composed from several instructions where ScalarE has the
    function in its table: SiLU as `x * 1/(1 + exp(-x))` or `x * sigmoid(x)`, sigmoid as
    `1/(1 + exp(-x))`, GELU from tanh/erf with its constants, softplus as `log(1 + exp(x))`, whether
    written with `nl.*` functions, Python operators, `nisa.activation`/`tensor_scalar`/
    `tensor_tensor`/`reciprocal`, or the standalone dialect's dst-first calls.

    ScalarE evaluates any table function in one pass at the cost of a copy (`activation` with
    scale and bias is `max(MIN_II, N)` cycles); the hand-rolled chain spends one pass per step, on
    VectorE for the adds and multiplies (VectorE `reciprocal` costs about 8N), and keeps fp32
    intermediates live in SBUF (REFERENCE §3.7, §5.3 rule 6).

    Fix: `nisa.activation(op=nl.silu, data=x)` (or `nl.silu(x)`; `nl.gelu`, `nl.sigmoid`,
    `nl.softplus` likewise), fusing any scale and bias into the same instruction.
    """

    id = "handrolled-activation"
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    y = nisa.activation(op=nl.silu, data=x)\n", inputs=_INPUTS),
        # exp and a reciprocal that do not make a sigmoid (softmax-style normalisation)
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    e = nl.exp(x)\n"
              "    s = nl.sum(e, axis=1, keepdims=True)\n    y = nl.multiply(e, nl.reciprocal(s))\n", inputs=_INPUTS),
        # x * sigmoid(y) of two different tensors is a gate, not a SiLU
        Valid(_HEAD + "@nki.jit\ndef k(a, b):\n    x = nl.load(a)\n    g = nl.load(b)\n    y = nl.multiply(x, nl.sigmoid(g))\n",
              inputs={"a": ((128, 512), "float32"), "b": ((128, 512), "float32")}),
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    y = nl.sigmoid(x)\n", inputs=_INPUTS),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n"
                "    e = nisa.activation(op=nl.exp, data=x, scale=-1.0, dtype=nl.float32)\n"
                "    d = nisa.tensor_scalar(e, np.add, 1.0, dtype=nl.float32)\n"
                "    s = nisa.reciprocal(d, dtype=nl.float32)\n"
                "    y = nisa.tensor_tensor(x, s, np.multiply)\n", inputs=_INPUTS, line=8),
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    y = x / (1.0 + nl.exp(-x))\n", inputs=_INPUTS, line=8),
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    y = nl.multiply(x, nl.sigmoid(x))\n", inputs=_INPUTS, line=8),
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    s = 1.0 / (1.0 + nl.exp(nl.negative(x)))\n", inputs=_INPUTS,
                line=8),
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    u = 0.7978845608 * (x + 0.044715 * x * x * x)\n"
                "    y = 0.5 * x * (1.0 + nl.tanh(u))\n", inputs=_INPUTS, line=8),
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    y = nl.log(nl.add(nl.exp(x), 1.0))\n", inputs=_INPUTS, line=8),
        # GELU with the cubic term from scalar_tensor_tensor and a named constant for sqrt(2/pi)
        Invalid(_HEAD + "C = 0.7978845608\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n"
                "    c3 = nisa.tensor_tensor(nisa.tensor_tensor(x, x, np.multiply), x, np.multiply)\n"
                "    u = nisa.scalar_tensor_tensor(data=c3, op0=np.multiply, operand0=0.044715, op1=np.add, operand1=x)\n"
                "    th = nisa.activation(op=nl.tanh, data=u, scale=C)\n"
                "    y = nisa.tensor_tensor(x, nisa.tensor_scalar(th, np.add, 1.0, op1=np.multiply, operand1=0.5), np.multiply)\n",
                inputs=_INPUTS, line=9),
        Invalid(_SA_HEAD + "@nki.jit\ndef k(a, o):\n    x = nl.load(a)\n    e = nl.ndarray((128, 512), nl.float32)\n"
                "    nisa.activation(e, op=nl.exp, data=x, scale=-1.0)\n    nisa.tensor_scalar(e, e, nl.add, 1.0)\n"
                "    nisa.reciprocal(e, e)\n    y = nl.ndarray((128, 512), nl.float32)\n    nisa.tensor_tensor(y, x, e, nl.multiply)\n",
                inputs={"a": ((128, 512), "float32"), "o": ((128, 512), "float32")}, line=8),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._found: list[tuple[str, int, int, int]] = []  # (pattern, first line, last line, instructions)
        self._writes: dict[str, list[cst.Call]] = {}  # standalone: the dst-first calls that wrote a name

    # -- terms ----------------------------------------------------------------------------------
    def _term(self, node: cst.BaseExpression | None, lines: set[int], depth: int = 0, seen: frozenset = frozenset()):
        if node is None or depth > _MAX_DEPTH:
            return ("var", "?")
        if isinstance(node, (cst.Integer, cst.Float)):
            return ("const", float(node.evaluated_value))
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
            inner = self._term(node.expression, lines, depth + 1, seen)
            return ("const", -inner[1]) if inner[0] == "const" else ("neg", inner)
        if isinstance(node, cst.Name):
            v = self.ctx.value(node)  # a module constant such as SQRT_2_OVER_PI
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return ("const", float(v))
            return self._name(node.value, lines, depth, seen)
        if isinstance(node, (cst.BinaryOperation, cst.Call)):
            hit = self._memo.get(id(node))  # a shared subexpression is built once per judgement
            if hit is None:
                sub: set[int] = set()
                if isinstance(node, cst.Call):
                    term = self._call(node, sub, depth, seen)
                elif type(node.operator) in _BINOPS:
                    sub.add(self.ctx.lines(node)[0])
                    term = (_BINOPS[type(node.operator)], self._term(node.left, sub, depth + 1, seen),
                            self._term(node.right, sub, depth + 1, seen))
                else:
                    term = ("var", id(node))
                hit = self._memo[id(node)] = (term, frozenset(sub))
            lines |= hit[1]
            return hit[0]
        return ("var", id(node))

    def _name(self, name: str, lines: set[int], depth: int, seen: frozenset):
        if name in seen:
            return ("var", name)
        writes = self._writes.get(name)
        if writes:  # standalone: the value is whatever the last dst-first call wrote
            call, rest = writes[-1], writes[:-1]
            saved = self._writes[name]
            self._writes[name] = rest
            try:
                return self._call(call, lines, depth, seen | {name} if not rest else seen)
            finally:
                self._writes[name] = saved
        b = self.ctx.lookup(name)
        if b is None or not isinstance(b.node, (cst.Call, cst.BinaryOperation, cst.UnaryOperation)):
            return ("var", name)
        if isinstance(b.node, cst.Call) and _api_tail(self.ctx.ev.api_name(b.node.func)) not in (*_FUNCS, *_COMPOSITE):
            return ("var", name)  # a load or anything else: a leaf
        return self._term(b.node, lines, depth + 1, seen | {name})

    def _call(self, node: cst.Call, lines: set[int], depth: int, seen: frozenset):
        name = self.ctx.ev.api_name(node.func) or ""
        tail = _api_tail(name)
        pos = [a.value for a in node.args if a.keyword is None]
        kw = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        if self.ctx.dialect.dialect == STANDALONE and name.startswith("nisa.") and "dst" not in kw:
            pos = pos[1:]  # dst first

        def t(n):
            return self._term(n, lines, depth + 1, seen)

        def arg(i, key):
            return kw.get(key, pos[i] if i < len(pos) else None)

        if tail == "activation":
            fn = _api_tail(self.ctx.ev.api_name(arg(0, "op")) if arg(0, "op") is not None else None)
            x = t(arg(1, "data"))
            scale, bias = kw.get("scale"), kw.get("bias")
            if scale is not None:
                s = t(scale)
                x = ("neg", x) if s == ("const", -1.0) else ("mul", x, s)
            if bias is not None:
                x = ("add", x, t(bias))
            lines.add(self.ctx.lines(node)[0])
            return (_FUNCS.get(fn or "", fn or "?"), x)
        if tail == "tensor_scalar":
            x = t(arg(0, "data"))
            for op_key, operand_key, i in (("op0", "operand0", 1), ("op1", "operand1", 3)):
                op = arg(i, op_key)
                if op is None:
                    break
                fn = _FUNCS.get(_api_tail(self.ctx.ev.api_name(op)) or "", "?")
                x = (fn, t(arg(i + 1, operand_key)), x) if _is_true(kw.get(f"reverse{i // 2}")) else (fn, x, t(arg(i + 1, operand_key)))
            lines.add(self.ctx.lines(node)[0])
            return x
        if tail == "scalar_tensor_tensor":  # (data op0 operand0) op1 operand1
            op0, op1 = arg(1, "op0"), arg(3, "op1")
            if op0 is None or op1 is None:
                return ("var", id(node))
            first = (_FUNCS.get(_api_tail(self.ctx.ev.api_name(op0)) or "", "?"), t(arg(0, "data")), t(arg(2, "operand0")))
            lines.add(self.ctx.lines(node)[0])
            return (_FUNCS.get(_api_tail(self.ctx.ev.api_name(op1)) or "", "?"), first, t(arg(4, "operand1")))
        if tail == "tensor_tensor":
            fn = _FUNCS.get(_api_tail(self.ctx.ev.api_name(arg(2, "op"))) or "", "?") if arg(2, "op") is not None else "?"
            lines.add(self.ctx.lines(node)[0])
            return (fn, t(arg(0, "data1")), t(arg(1, "data2")))
        fn = _FUNCS.get(tail or "")
        if fn is None or not name.startswith(("nl.", "nisa.")):
            return ("var", id(node))
        operands = pos[:2] or [kw[k] for k in ("x", "data", "src", "data1", "y", "data2") if k in kw][:2]
        if not operands:
            return ("var", id(node))
        if fn == "copy":
            return t(operands[0])
        lines.add(self.ctx.lines(node)[0])
        return (fn, *[t(p) for p in operands])

    # -- hooks ------------------------------------------------------------------------------------
    def on_assign(self, a: AssignInfo) -> None:
        if a.kind in ("bind", "store") and isinstance(a.value_node, (cst.Call, cst.BinaryOperation)):
            self._judge(a.value_node, a.start)

    def on_call(self, call: CallInfo) -> None:
        if self.ctx.dialect.dialect != STANDALONE or not call.name.startswith("nisa."):
            return
        dst = call.arg(0, "dst")
        if isinstance(dst, cst.Name):
            self._judge(call.node, call.start)
            self._writes.setdefault(dst.value, []).append(call.node)

    def _judge(self, node: cst.BaseExpression, line: int) -> None:
        self._memo: dict[int, tuple] = {}
        lines: set[int] = set()
        term = self._term(node, lines)
        pattern = _match(term)
        if pattern is not None and len(lines) >= 1 and _instructions(term) >= 2:
            self._found.append((pattern, min(lines | {line}), line, _instructions(term)))

    def leave_function(self, function: FunctionInfo) -> None:
        found, self._found, self._writes = self._found, [], {}
        for pattern, first, last, n in found:
            # a sigmoid inside a SiLU found later is part of that SiLU
            if any(o is not None and (f2 <= first and last <= l2) and (f2, l2) != (first, last)
                   for o, f2, l2, _ in found):
                continue
            self.report((first, last), f"{pattern} built from {n} instructions (lines {first}-{last}); "
                        f"ScalarE computes it in one: {_BUILTIN[pattern]}",
                        metrics={"instructions": n, "instructions_saved": n - 1, "first_line": first},
                        labels={"activation": pattern})


def _is_true(node) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _instructions(term) -> int:
    if term[0] in ("var", "const"):
        return 0
    return (0 if term[0] == "neg" else 1) + sum(_instructions(x) for x in term[1:] if isinstance(x, tuple))


def _const(term, value: float | None = None) -> bool:
    return term[0] == "const" and (value is None or abs(term[1] - value) < 1e-6)


def _neg_of(term):
    """x when term is -x, x * -1 or 0 - x."""
    if len(term) < 2 or (term[0] != "neg" and len(term) < 3):
        return None
    if term[0] == "neg":
        return term[1]
    if term[0] == "mul":
        a, b = term[1], term[2]
        if _const(b, -1.0):
            return a
        if _const(a, -1.0):
            return b
    if term[0] == "sub" and _const(term[1], 0.0):
        return term[2]
    return None


def _one_plus(term):
    """X when term is 1 + X or X + 1."""
    if term[0] == "add" and len(term) == 3:
        if _const(term[1], 1.0):
            return term[2]
        if _const(term[2], 1.0):
            return term[1]
    return None


def _sigmoid_of(term):
    """x when term computes sigmoid(x): nl.sigmoid(x), 1 / (1 + exp(-x)), recip(1 + exp(-x))."""
    if len(term) < 2 or term[0] in ("var", "const"):
        return None
    if term[0] == "sigmoid":
        return term[1]
    if term[0] == "recip":
        denom = term[1]
    elif term[0] == "div" and len(term) == 3 and _const(term[1], 1.0):
        denom = term[2]
    else:
        return None
    inner = _one_plus(denom)
    if inner is not None and inner[0] == "exp" and len(inner) == 2:
        return _neg_of(inner[1])
    return None


def _silu(term) -> bool:
    if len(term) != 3:
        return False
    if term[0] == "mul":
        a, b = term[1], term[2]
        return _sigmoid_of(b) == a or _sigmoid_of(a) == b
    if term[0] == "div":  # x / (1 + exp(-x))
        inner = _one_plus(term[2])
        return inner is not None and inner[0] == "exp" and len(inner) == 2 and _neg_of(inner[1]) == term[1]
    return False


def _contains(term, op: str) -> bool:
    return term[0] == op or any(isinstance(x, tuple) and _contains(x, op) for x in term[1:])


def _has_const(term, values: tuple[float, ...]) -> bool:
    if term[0] == "const":
        return any(abs(term[1] - v) < 1e-4 for v in values)
    return any(isinstance(x, tuple) and _has_const(x, values) for x in term[1:])


def _match(term) -> str | None:
    if term[0] in ("var", "const"):
        return None
    if _silu(term):
        return "silu"
    if term[0] == "mul" and ((_contains(term, "tanh") and _has_const(term, (0.044715, 0.7978845608, 0.79788)))
                             or (_contains(term, "erf") and _has_const(term, (0.7071067811865476, 0.70710678, 1.4142135623730951)))):
        return "gelu"
    if term[0] == "log" and len(term) == 2 and (inner := _one_plus(term[1])) is not None and inner[0] == "exp":
        return "softplus"
    if _sigmoid_of(term) is not None and term[0] != "sigmoid":
        return "sigmoid"
    return None
