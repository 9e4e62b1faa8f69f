"""psum-accumulate-not-inplace: `acc = acc + matmul(...)` instead of `acc += matmul(...)`."""

from __future__ import annotations

import math

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import Invalid, Rule
from evidence.static.model import AssignInfo
from evidence.static.shapes import MATMUL_CALLS, Tensor

_HEAD = "import neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"


class PsumAccumulateNotInplace(Rule):
    """Flags matmul accumulation written as `acc = acc + matmul(...)`, `acc[...] = acc + ...` or
    `nl.add(acc, matmul(...))` instead of the in-place `acc += matmul(...)`.

    Only `psum_tile += matmul(...)` maps to TensorE accumulation inside a PSUM bank (an
    accumulation group). The other spellings give the same numbers but lower to a separate
    VectorE add per step, reading and writing PSUM each time (REFERENCE §3.5, §5.4).

    Labels: `accumulator` = psum | sbuf | unknown (an SBUF accumulator evicts every partial product
    from PSUM as well); metric `accumulation_steps` (the trip count of the loops it accumulates over).

    Fix: allocate the accumulator once with `nl.zeros(..., buffer=nl.psum)` outside the K loop
    and write `acc += nisa.nc_matmul(...)` (or `acc[...] += ...`).
    """

    id = "psum-accumulate-not-inplace"
    severity = Severity.medium
    VALID = [
        _HEAD + "acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)\nfor k in nl.affine_range(4):\n"
        "    acc += nisa.nc_matmul(a, b)\n",
        _HEAD + "s = nl.zeros((128, 512), nl.float32)\nfor k in nl.affine_range(4):\n    s = s + x\n",
    ]
    INVALID = [
        Invalid(_HEAD + "acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)\nfor k in nl.affine_range(4):\n"
                "    acc = acc + nisa.nc_matmul(a, b)\n", line=5),
        _HEAD + "acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)\nfor k in nl.affine_range(4):\n"
        "    p = nl.matmul(a, b, transpose_x=True)\n    acc[...] = nl.add(acc, p)\n",
    ]

    def on_assign(self, a: AssignInfo) -> None:
        if a.kind not in ("bind", "store") or a.target is None or a.target not in a.names:
            return
        if not _has_matmul(self.ctx, a.value_node):
            return
        t = a.target_value
        buffer = t.buffer if isinstance(t, Tensor) and t.buffer in ("psum", "sbuf") else "unknown"
        where = {"psum": "PSUM ", "sbuf": "an SBUF accumulator "}.get(buffer, "")
        # An SBUF accumulator also evicts every partial product from PSUM (a PSUM read per matmul).
        loops = [lp for lp in a.loops if lp.id not in (a.target_def_loops or ()) and lp.id not in a.index_deps]
        steps = None if any(lp.trip is None for lp in loops) else math.prod(lp.trip for lp in loops)
        self.report(a.node, f"matmul accumulated into {where}'{a.target}' by re-assignment instead of '+='"
                    + (f" over {steps} steps" if steps else ""),
                    metrics={"extra_vector_adds_per_step": 1, "accumulation_steps": steps}, labels={"accumulator": buffer})


def _has_matmul(ctx, node: cst.BaseExpression) -> bool:
    """Is a matmul call (or a name bound to one) an operand of the expression's top-level sum?"""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _has_matmul(ctx, node.left) or _has_matmul(ctx, node.right)
    if isinstance(node, cst.Call):
        name = ctx.ev.api_name(node.func)
        if name in MATMUL_CALLS:
            return True
        if name in ("nl.add", "nisa.tensor_tensor"):
            return any(_has_matmul(ctx, arg.value) for arg in node.args[:2])
        return False
    if isinstance(node, cst.Name):
        b = ctx.lookup(node.value)
        return b is not None and isinstance(b.value, Tensor) and b.value.origin == "matmul"
    return False
