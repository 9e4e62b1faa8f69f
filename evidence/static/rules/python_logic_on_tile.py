"""python-logic-on-tile: Python `and`/`or`/`not`/`if` applied to tiles."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import Invalid, Rule, Valid
from evidence.static.shapes import Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"


class PythonLogicOnTile(Rule):
    """Flags Python boolean logic on tiles: `and`/`or`/`not`, or an `if`/`while`/conditional
    expression whose test is a tile or a comparison of tiles.

    NKI traces the kernel in Python; a tile has no truth value at trace time
    (err_ambiguous_tensor_truth_value), and control flow cannot depend on runtime tensor values
    in the beta dialect (err_dynamic_control_flow_not_supported) (REFERENCE §2).

    Beta-only: the standalone dialect (0.3+) lowers some control flow on runtime values
    (register conditions, dynamic loops), and which tile truth tests it rejects is not documented
    precisely enough ([SDK-HEAD]) to flag them without false positives.

    A parameter of a helper (a `@nki.jit(mode='trace')` function included) is a tile only when
    its calls pass one or its body uses it as one (`evidence.static.helper_args`).

    Fix: use `&`, `|`, `~` for element-wise logic, `nl.where` / masks / `affine_select` for
    per-element choices, and `is not None` for optional arguments.
    """

    id = "python-logic-on-tile"
    severity = Severity.critical
    performance = False
    VALID = [
        Valid(_HEAD + "def k(a, b=None):\n    x = nl.load(a)\n    if b is not None:\n        x = nl.add(x, 1.0)\n"
              "    y = nl.where(x > 0, x, 0.0)\n", inputs={"a": ((128, 64), "float32")}),
        Valid(_HEAD + "def k(a, n):\n    if n > 2:\n        x = nl.load(a)\n", inputs={"a": ((128, 64), "float32"), "n": 4}),
        # a trace-mode helper's parameters are what its calls pass (a flag here), not tiles
        Valid(_HEAD + "@nki.jit(mode='trace')\ndef step(acc, t, causal):\n    if causal:\n"
              "        acc[...] = nl.add(acc, t)\n\n@nki.jit\ndef k(a, causal=True):\n"
              "    acc = nl.zeros((128, 64), nl.float32)\n    step(acc, nl.load(a), causal)\n",
              inputs={"a": ((128, 64), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "def k(a):\n    x = nl.load(a)\n    y = x > 0 and x < 1\n", inputs={"a": ((128, 64), "float32")}, line=5),
        Invalid(_HEAD + "def k(a):\n    x = nl.load(a)\n    if x:\n        pass\n", inputs={"a": ((128, 64), "float32")}, line=5),
        Invalid(_HEAD + "def k(a):\n    x = nl.load(a)\n    m = nl.max(x, axis=1)\n    if m > 0:\n        pass\n",
                inputs={"a": ((128, 64), "float32")}, line=6),
    ]

    def _tiled(self, node: cst.BaseExpression) -> bool:
        todo = [node]  # an explicit stack: generated code chains `and`s thousands deep
        while todo:
            n = todo.pop()
            if isinstance(n, cst.Comparison):
                if not all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in n.comparisons):
                    todo += [c.comparator for c in reversed(n.comparisons)] + [n.left]
            elif isinstance(n, cst.BooleanOperation):
                todo += [n.right, n.left]
            elif isinstance(n, cst.UnaryOperation) and isinstance(n.operator, cst.Not):
                todo.append(n.expression)
            elif isinstance(self.ctx.value(n), Tensor):
                return True
        return False

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if self._tiled(node.left) or self._tiled(node.right):
            op = "and" if isinstance(node.operator, cst.And) else "or"
            self.report(node, f"Python '{op}' applied to a tile; use '&' / '|' or a mask")

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not) and self._tiled(node.expression):
            self.report(node, "Python 'not' applied to a tile; use '~' or nl.logical_not")

    def _test(self, node: cst.CSTNode, test: cst.BaseExpression, what: str) -> None:
        if self._tiled(test):
            line = self.ctx.lines(test)
            self.report(line, f"'{what}' on a tile value: control flow cannot depend on tensor data")

    def visit_If(self, node: cst.If) -> None:
        self._test(node, node.test, "if")

    def visit_While(self, node: cst.While) -> None:
        self._test(node, node.test, "while")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._test(node, node.test, "if-expression")
