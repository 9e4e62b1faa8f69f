"""psum-accumulate-not-inplace: `acc = acc + matmul(...)` instead of `acc += matmul(...)`."""

from __future__ import annotations

import math

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule
from evidence.static.model import AssignInfo, CallInfo
from evidence.static.rulekit import dst_node, root_name
from evidence.static.shapes import MATMUL_CALLS, Tensor

_HEAD = "import neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
_SA = "import nki.language as nl\nimport nki.isa as nisa\n"


class PsumAccumulateNotInplace(Rule):
    """Flags matmul accumulation written as `acc = acc + matmul(...)`, `acc[...] = acc + ...` or
    `nl.add(acc, matmul(...))` instead of the in-place `acc += matmul(...)`.

    Only `psum_tile += matmul(...)` maps to TensorE accumulation inside a PSUM bank (an
    accumulation group). The other spellings give the same numbers but lower to a separate
    VectorE add per step, reading and writing PSUM each time (REFERENCE §3.5, §5.4).

    In the standalone dialect `nisa.nc_matmul(dst, ...)` accumulates into `dst` by itself (the
    first matmul into a fresh PSUM tile overwrites it, later ones add); the flagged form there is
    a product written to its own tile and added with `nisa.tensor_tensor(dst=acc, data1=acc,
    data2=part, op=nl.add)`. Not when that tile is itself an accumulation group (its nc_matmul sits
    in a loop of more than one step that does not re-create it): adding one PSUM group per K block
    into SBUF is the blocked-matmul pattern for outputs larger than PSUM, one VectorE add per group.

    Labels: `accumulator` = psum | sbuf | unknown (an SBUF accumulator evicts every partial product
    from PSUM as well); metric `accumulation_steps` (the trip count of the loops it accumulates over).

    Fix: allocate the accumulator once with `nl.zeros(..., buffer=nl.psum)` outside the K loop
    and write `acc += nisa.nc_matmul(...)` (or `acc[...] += ...`); standalone: allocate one PSUM
    tile per output tile and call `nisa.nc_matmul(acc, ...)` for every K step.
    """

    id = "psum-accumulate-not-inplace"
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
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
        Invalid(_SA + "acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\nfor k in range(4):\n"
                "    part = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n"
                "    nisa.nc_matmul(part, a[k], b[k])\n"
                "    nisa.tensor_tensor(dst=acc, data1=acc, data2=part, op=nl.add)\n", line=7),
    ]
    VALID.append(  # K blocks of 4 PSUM-accumulated steps each, the block sums added in SBUF
        _SA + "acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\nfor kb in range(8):\n"
        "    part = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n    for k in range(4):\n"
        "        nisa.nc_matmul(part, a[kb * 4 + k], b[kb * 4 + k])\n"
        "    nisa.tensor_tensor(dst=acc, data1=acc, data2=part, op=nl.add)\n")

    VALID.append(  # the add sits in a loop that never runs (one column tile: range(1, 1))
        _SA + "acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)\ntiles = 128 // 128\nfor k in range(4):\n"
        "    part = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\n"
        "    nisa.nc_matmul(part, a[k], b[k])\n"
        "    for j in range(1, tiles):\n"
        "        nisa.tensor_tensor(dst=acc, data1=acc, data2=part, op=nl.add)\n")

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._products: set[str] = set()  # standalone: tiles a dst-first nc_matmul wrote (one product each)

    def on_call(self, call: CallInfo) -> None:
        if any(lp.trip == 0 for lp in call.loops):
            return  # never runs (nki-library's router top-k merges PE column tiles in `range(1, n)`, n = 1 untiled)
        dst = dst_node(self.ctx, call)
        if dst is None:
            return
        name = root_name(dst)
        if call.name == "nisa.nc_matmul":
            if name and not self._accumulation_group(call, dst, name):
                self._products.add(name)
            else:
                self._products.discard(name)
            return
        if call.name == "nisa.tensor_tensor" and name and _is_add(self.ctx, call.arg(3, "op")):
            operands = {root_name(call.arg(1, "data1")), root_name(call.arg(2, "data2"))}
            if name in operands and (operands - {name}) & self._products:
                t = self.ctx.value(dst)
                buffer = t.buffer if isinstance(t, Tensor) and t.buffer in ("psum", "sbuf") else "unknown"
                self.report(call.node, f"matmul product added into '{name}' by nisa.tensor_tensor instead of "
                            "accumulating with nisa.nc_matmul into one PSUM tile",
                            metrics={"extra_vector_adds_per_step": 1}, labels={"accumulator": buffer})
        elif name:
            self._products.discard(name)

    def _accumulation_group(self, call: CallInfo, dst: cst.BaseExpression, name: str) -> bool:
        """Does this nc_matmul accumulate several steps into `name`: is it inside a loop of more than
        one step that neither re-creates the tile nor moves the written part with its index?"""
        binding = self.ctx.lookup(name)
        created_in = set(binding.def_loops) if binding is not None else set()
        index_deps, _ = self.ctx.deps(dst)
        return any(lp.id not in created_in and lp.id not in index_deps and lp.trip != 1 for lp in call.loops)

    def leave_function(self, fn) -> None:
        self._products = set()

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


def _is_add(ctx, node) -> bool:
    return ctx.ev.api_name(node) in ("nl.add", "np.add", "numpy.add") if isinstance(node, (cst.Name, cst.Attribute)) \
        else False


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
