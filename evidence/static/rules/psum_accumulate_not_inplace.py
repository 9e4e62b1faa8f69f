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
    Nor when the add merges partial sums of different PE column tiles (`tile_position` whose column
    offset moves with a loop, or a product of one column offset added into a tile that already holds
    another column tile's partial sum): each column tile writes its own PSUM partitions, so their
    partial sums cannot share an accumulation group and must be merged by adds (router top-k with
    column tiling for few tokens). The exemption is per add, not per function: another add of the same
    function accumulating one column tile's per-step products is still reported, as is a product tile
    created afresh in a loop over more steps than there are column tiles (or an unknown number): steps
    on the same column tile could have accumulated.

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

    VALID.append(  # K tile k on PE column tile k % 2 (its own PSUM partitions), the two column sums merged by adds
        _SA + "ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)\nfor k in range(4):\n"
        "    nisa.nc_matmul(ps[nl.ds(k % 2 * 64, 64), :], a[k], b[k], tile_position=(0, k % 2 * 64), "
        "tile_size=(128, 64))\nacc = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.sbuf)\n"
        "nisa.tensor_copy(dst=acc, src=ps[0:64, :])\n"
        "nisa.tensor_tensor(dst=acc, data1=acc, data2=ps[64:128, :], op=nl.add)\n")
    VALID.append(  # beta: column tiles 0 and 1 of one K split, each product in its own PSUM tile
        _HEAD + "p0 = nisa.nc_matmul(a0, b0, tile_position=(0, 0), tile_size=(128, 64))\n"
        "p1 = nisa.nc_matmul(a1, b1, tile_position=(0, 64), tile_size=(128, 64))\nres = nl.copy(p0)\n"
        "res = nl.add(res, p1)\n")
    INVALID.append(Invalid(  # one fixed column tile: its K steps could have accumulated in one PSUM tile
        _HEAD + "res = nl.zeros((64, 512), nl.float32)\nfor k in nl.affine_range(4):\n"
        "    part = nisa.nc_matmul(a[k], b[k], tile_position=(0, 64), tile_size=(128, 64))\n"
        "    res[...] = nl.add(res, part)\n", line=6))
    INVALID.append(Invalid(  # alternating column tiles, a fresh PSUM tile per K step over KT (unknown) steps: steps
        # on the same column tile could have accumulated
        _SA + "acc = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.sbuf)\nfor k in range(KT):\n"
        "    part = nl.ndarray((64, 512), dtype=nl.float32, buffer=nl.psum)\n"
        "    nisa.nc_matmul(part, a[k], b[k], tile_position=(0, k % 2 * 64), tile_size=(128, 64))\n"
        "    nisa.tensor_tensor(dst=acc, data1=acc, data2=part, op=nl.add)\n", line=7))

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._products: set[str] = set()  # standalone: tiles a dst-first nc_matmul wrote (one product each)
        self._column_of: dict = {}  # matmul call node id / product name -> its PE column tile (_column)
        # tile name -> the PE column tiles whose partial sums it holds (copied or added into it)
        self._holds: dict[str, frozenset] = {}

    def on_call(self, call: CallInfo) -> None:
        if any(lp.trip == 0 for lp in call.loops):
            return  # never runs (nki-library's router top-k merges PE column tiles in `range(1, n)`, n = 1 untiled)
        if call.name in MATMUL_CALLS:
            dst = dst_node(self.ctx, call)
            binding = self.ctx.lookup(root_name(dst)) if dst is not None and root_name(dst) else None
            fresh = set(binding.def_loops) if binding is not None else {lp.id for lp in call.loops}
            self._column_of[id(call.node)] = self._column(call.node, call.loops, fresh)
        dst = dst_node(self.ctx, call)
        if dst is None:
            return
        name = root_name(dst)
        if call.name == "nisa.nc_matmul":
            if name and not self._accumulation_group(call, dst, name):
                self._products.add(name)
                self._column_of[name] = self._column_of.get(id(call.node))
            else:
                self._products.discard(name)
            return
        sources = {root_name(a.value) for a in call.node.args[1:]} - {None}
        if call.name == "nisa.tensor_tensor" and name and _is_add(self.ctx, call.arg(3, "op")):
            operands = {root_name(call.arg(1, "data1")), root_name(call.arg(2, "data2"))}
            added = {p for p in (operands - {name}) & self._products if not self._column_partial(p, name)}
            if name in operands and added:
                t = self.ctx.value(dst)
                buffer = t.buffer if isinstance(t, Tensor) and t.buffer in ("psum", "sbuf") else "unknown"
                self.report(call.node, f"matmul product added into '{name}' by nisa.tensor_tensor instead of "
                            "accumulating with nisa.nc_matmul into one PSUM tile",
                            metrics={"extra_vector_adds_per_step": 1}, labels={"accumulator": buffer})
        if name:
            self._products.discard(name)
            self._hold(name, sources, keep=True)  # a dst-first write (copy, add, activation) into part of the tile

    def _accumulation_group(self, call: CallInfo, dst: cst.BaseExpression, name: str) -> bool:
        """Does this nc_matmul accumulate several steps into `name`: is it inside a loop of more than
        one step that neither re-creates the tile nor moves the written part with its index?"""
        binding = self.ctx.lookup(name)
        created_in = set(binding.def_loops) if binding is not None else set()
        index_deps, _ = self.ctx.deps(dst)
        return any(lp.id not in created_in and lp.id not in index_deps and lp.trip != 1 for lp in call.loops)

    def _column(self, call: cst.Call, loops, fresh: set) -> str | None:
        """The PE column tile a matmul writes: None without `tile_position`, "varies" when its column offset
        moves with an enclosing loop, else the offset (its value, or its source text). A product tile created
        afresh in that loop (`fresh`: the loops its tile is created in) over more steps than there are column
        tiles (or an unknown number) is None: some steps share a column tile and could have accumulated."""
        pos = _keyword(call, "tile_position")
        if isinstance(pos, (cst.Tuple, cst.List)) and len(pos.elements) == 2:
            pos = pos.elements[1].value
        if pos is None or (isinstance(pos, (cst.Tuple, cst.List)) and not pos.elements):
            return None
        deps, _ = self.ctx.deps(pos)
        varying = [lp for lp in loops if lp.id in deps]
        if varying:
            size = self.ctx.value(_keyword(call, "tile_size"))
            columns = 128 // size[1] if isinstance(size, tuple) and len(size) == 2 and isinstance(size[1], int) \
                and size[1] > 0 else 4  # column tiles are at least 32 wide
            if all(lp.id not in fresh or (lp.trip is not None and lp.trip <= columns) for lp in varying):
                return "varies"
            return None
        value = self.ctx.value(pos)
        if isinstance(value, tuple) and len(value) == 2:  # `tile_position=position`, a name bound to a pair
            value = value[1]
        return repr(value) if isinstance(value, int) else cst.Module([]).code_for_node(pos)

    def _column_partial(self, product, accumulator: str | None) -> bool:
        """Does adding `product` (a name, or a matmul call node) into `accumulator` merge partial sums of
        different PE column tiles: its column offset moves with a loop, or the accumulator holds partial sums of
        other column tiles and none of the product's own (one that it holds could have accumulated with this
        product in PSUM)? Per add: another column merge elsewhere in the function exempts nothing here."""
        column = self._column_of.get(product if isinstance(product, str) else id(product))
        if column == "varies":
            return True
        held = self._holds.get(accumulator, frozenset())
        return column is not None and bool(held) and column not in held

    def _columns(self, name: str) -> frozenset:
        """The PE column tiles whose partial sums the tile `name` holds (its own, as a product, included)."""
        own = self._column_of.get(name)
        return self._holds.get(name, frozenset()) | ({own} if own is not None else set())

    def _hold(self, target: str, names, keep: bool) -> None:
        """`target` now holds the column partial sums of `names` (and, `keep`: what it held before)."""
        held = set(self._holds.get(target, ())) if keep else set()
        for n in names:
            held |= self._columns(n)
        if held:
            self._holds[target] = frozenset(held)
        else:
            self._holds.pop(target, None)

    def leave_function(self, fn) -> None:
        self._products = set()
        self._column_of = {}
        self._holds = {}

    def on_assign(self, a: AssignInfo) -> None:
        if a.target is not None and isinstance(a.value_node, cst.Call) \
                and self.ctx.ev.api_name(a.value_node.func) in MATMUL_CALLS:  # `part = nisa.nc_matmul(...)`
            self._column_of[a.target] = self._column_of[id(a.value_node)] = self._column(
                a.value_node, a.loops, {lp.id for lp in a.loops})  # a fresh result per execution
        try:  # the check first: what the target held before this assignment decides whether it merges columns
            self._check_assign(a)
        finally:
            if a.target is not None:
                self._hold(a.target, a.names, keep=a.kind != "bind")

    def _check_assign(self, a: AssignInfo) -> None:
        if a.kind not in ("bind", "store") or a.target is None or a.target not in a.names:
            return
        if not _has_matmul(self.ctx, a.value_node, lambda p: self._column_partial(p, a.target)):
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


def _keyword(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)


def _is_add(ctx, node) -> bool:
    return ctx.ev.api_name(node) in ("nl.add", "np.add", "numpy.add") if isinstance(node, (cst.Name, cst.Attribute)) \
        else False


def _has_matmul(ctx, node: cst.BaseExpression, column_partial) -> bool:
    """Is a matmul call (or a name bound to one) an operand of the expression's top-level sum, other than
    the partial sum of one of several PE column tiles (`column_partial`)?"""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return _has_matmul(ctx, node.left, column_partial) or _has_matmul(ctx, node.right, column_partial)
    if isinstance(node, cst.Call):
        name = ctx.ev.api_name(node.func)
        if name in MATMUL_CALLS:
            return not column_partial(node)
        if name in ("nl.add", "nisa.tensor_tensor"):
            return any(_has_matmul(ctx, arg.value, column_partial) for arg in node.args[:2])
        return False
    if isinstance(node, cst.Name):
        b = ctx.lookup(node.value)
        return (b is not None and isinstance(b.value, Tensor) and b.value.origin == "matmul"
                and not column_partial(node.value))
    return False
