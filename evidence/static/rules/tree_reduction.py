"""tree-reduction: a CUDA shared-memory tree reduction replayed as halving steps along the free axis."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import AssignInfo, CallInfo

_HEAD = "import numpy as np\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\nimport neuronxcc.nki.language as nl\n"
_INPUTS = {"x": ((128, 1024), "float32")}


class TreeReduction(Rule):
    """Flags a loop whose body folds one part of a tile onto another part of the same tile
    (`t[:, 0:half] = op(t[:, 0:half], t[:, half:2 * half])` with `half` shrinking each step): the
    shared-memory tree reduction of a CUDA block, replayed along the free axis.

    A CUDA block needs the tree because its threads can only combine through shared memory; an NKI
    instruction already reduces the whole free axis of 128 partitions at once (`nl.max`/`nl.sum`,
    `nisa.tensor_reduce`, or the accumulator of `activation_reduce`). The tree costs log2(F)
    dependent instructions, most of them on a handful of elements per partition (REFERENCE §6).

    Fix: one `nisa.tensor_reduce(op, data, axis=[1])` (or the `reduce_res` of the activation that
    produces the data) per reduction.
    """

    id = "tree-reduction"
    severity = Severity.low
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(x):\n    t = nl.load(x)\n    m = nisa.tensor_reduce(np.max, t, axis=[1], keepdims=True)\n",
              inputs=_INPUTS),
        # adding the second half of one tensor to the first half of another is not a tree
        Valid(_HEAD + "@nki.jit\ndef k(x, y):\n    a = nl.load(x)\n    b = nl.load(y)\n"
              "    a[:, 0:512] = nl.add(a[:, 0:512], b[:, 512:1024])\n", inputs={"x": ((128, 1024), "float32"),
                                                                            "y": ((128, 1024), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(x):\n    t = nl.load(x)\n    for s in nl.static_range(10):\n"
                "        half = 1024 >> (s + 1)\n"
                "        t[:, 0:half] = nisa.tensor_tensor(t[:, 0:half], t[:, half:2 * half], np.maximum)\n",
                inputs=_INPUTS, line=10),
        Invalid(_HEAD + "@nki.jit\ndef k(x):\n    t = nl.load(x)\n    for s in nl.static_range(10):\n"
                "        h = 512 >> s\n        t[:, 0:h] = t[:, 0:h] + t[:, h:2 * h]\n", inputs=_INPUTS, line=10),
    ]

    def _folds(self, target: cst.Subscript, value: cst.BaseExpression, loops: frozenset[int]) -> bool:
        name = target.value
        if not isinstance(name, cst.Name) or not loops:
            return False
        operands = [value.left, value.right] if isinstance(value, cst.BinaryOperation) else (
            [a.value for a in value.args] if isinstance(value, cst.Call) else [])
        parts = [o for o in operands if isinstance(o, cst.Subscript) and isinstance(o.value, cst.Name)
                 and o.value.value == name.value]
        if len(parts) < 2:
            return False
        codes = {cst.Module([]).code_for_node(p) for p in parts}
        # two different slices of the same tile, and the slice bounds move with the loop (the halving)
        return len(codes) >= 2 and any(self.ctx.deps(p)[0] & loops for p in parts)

    def on_assign(self, a: AssignInfo) -> None:
        if a.kind != "store" or not a.loops or not isinstance(a.node, cst.Assign):
            return
        for t in a.node.targets:
            if isinstance(t.target, cst.Subscript) and self._folds(t.target, a.value_node,
                                                                   frozenset(lp.id for lp in a.loops)):
                loop = a.loops[-1]
                self.report(a.node, f"tree reduction: loop at line {loop.start} folds one half of "
                            f"'{t.target.value.value}' onto the other ({loop.trip or '?'} steps)",  # type: ignore[union-attr]
                            metrics={"steps": loop.trip, "loop_line": loop.start})
                return

    def on_call(self, call: CallInfo) -> None:  # standalone: nisa.tensor_tensor(dst, a, b, op) writes in place
        if self.ctx.dialect.dialect != STANDALONE or call.name != "nisa.tensor_tensor" or not call.loops:
            return
        dst = call.arg(0, "dst")
        if isinstance(dst, cst.Subscript) and self._folds(dst, call.node, frozenset(lp.id for lp in call.loops)):
            self.report(call.node, f"tree reduction: loop at line {call.loops[-1].start} folds one half of a tile "
                        "onto the other", metrics={"steps": call.loops[-1].trip, "loop_line": call.loops[-1].start})
