"""sequential-without-dependency: sequential_range on a loop whose iterations are independent."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import Invalid, Rule, Valid
from evidence.static.model import LoopInfo
from evidence.static.rulekit import root_name
from evidence.static.shapes import Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
_CARRY_CALLS = frozenset({"nisa.tensor_tensor_scan", "nl.loop_reduce", "nl.atomic_rmw", "nl.all_reduce"})
_WORK = ("nl.load", "nl.store", "nisa.", "nl.matmul", "nl.exp", "nl.add", "nl.multiply", "nl.copy")
# Callees that cannot update their arguments: NKI (judged by its own calls), numpy, math, builtins.
_PURE_PREFIX = ("nl.", "nisa.", "nki.", "ncc.", "nt.", "np.", "math.")
_PURE_BUILTINS = frozenset({
    "range", "len", "min", "max", "int", "float", "abs", "round", "bool", "str", "tuple", "list", "print",
    "isinstance", "getattr", "enumerate", "zip", "sum", "divmod",
})


class SequentialWithoutDependency(Rule):
    """Flags `nl.sequential_range` (and plain `range`, which beta lowers to it) loops doing NKI
    work whose iterations carry no state: no `+=`, no running value, no buffer rewritten at a
    fixed location, no scan, no reduction chained through accumulator registers (`reduce_cmd`),
    no tensor from outside the loop handed to a helper of the submission (or any other non-NKI
    call), which may read and update it (`_step(acc, x)`).

    sequential_range tells the compiler to keep iterations in order, which forbids overlapping
    one iteration's DMA with another's compute; independent iterations lose the pipelining that
    affine_range allows (REFERENCE §3.3, §5.3 rule 4).

    Beta-only: in the standalone dialect (0.3+) every iterator is an alias of Python `range`;
    choosing among them changes nothing the compiler sees (`deprecated-nki-api` notes the alias).

    Fix: use `nl.affine_range` for independent iterations.
    """

    id = "sequential-without-dependency"
    severity = Severity.low
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    state = nl.zeros((128, 1), nl.float32)\n    for i in nl.sequential_range(4):\n"
              "        x = nl.load(a[i * 128:(i + 1) * 128, 0:1])\n        state = nl.add(state, x)\n",
              inputs={"a": ((512, 8), "float32")}),
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n",
              inputs={"a": ((512, 8), "float32")}),
        Valid(_HEAD + "@nki.jit\ndef k(a, lo, hi):\n    for i in nl.sequential_range(4):\n"
              "        x = nl.load(a[:, i * 128:(i + 1) * 128])\n"
              "        nisa.range_select(on_true_tile=x, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=lo,\n"
              "                          bound1=hi, reduce_cmd=nisa.reduce_cmd.reduce, range_start=i * 128)\n",
              inputs={"a": ((128, 512), "float32")}),
        Valid(_HEAD + "@nki.jit(mode='trace')\ndef step(acc, x):\n    acc[...] = nl.add(acc, x)\n\n"
              "@nki.jit\ndef k(a):\n    acc = nl.zeros((128, 8), nl.float32)\n    for i in nl.sequential_range(4):\n"
              "        x = nl.load(a[i * 128:(i + 1) * 128, :])\n        step(acc, x)\n",
              inputs={"a": ((512, 8), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray((512, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n"
                "    for i in nl.sequential_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n"
                "        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(x))\n    return out\n",
                inputs={"a": ((512, 8), "float32")}, line=7),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._carried: set[int] = set()  # loops handing outer state to a call that may update it

    def visit_Call(self, node: cst.Call) -> None:
        if not self.ctx.loop_stack:
            return
        api = self.ctx.ev.api_name(node.func)
        if api is not None and (api.startswith(_PURE_PREFIX) or api in _PURE_BUILTINS):
            return
        reads = [a.value for a in node.args]
        if api is None and isinstance(node.func, cst.Attribute):
            reads.append(node.func.value)  # a method of an outer object (`tiles.append(t)`)
        for expr in reads:
            b = self.ctx.lookup(root_name(expr) or "")
            if b is None or not (b.value is None or isinstance(b.value, Tensor)):
                continue  # unbound, or a Python value (a size, a flag, a module)
            if isinstance(b.value, Tensor) and b.value.origin == "input" and not b.value.mutable:
                continue  # an immutable kernel input holds no state to carry
            self._carried.update(lp.id for lp in self.ctx.loop_stack if lp.id not in b.def_loops)

    def leave_loop(self, loop: LoopInfo) -> None:
        if loop.kind not in ("sequential_range", "range") or (loop.trip is not None and loop.trip < 2):
            return
        if loop.id in self._carried:
            return
        if not any(c.name.startswith(_WORK) for c in loop.calls):
            return
        # reduce_cmd chains a reduction through the engine's accumulator registers across instructions
        if any(c.name in _CARRY_CALLS or c.has_kw("dst_rmw_op") or c.has_kw("reduce_cmd") for c in loop.calls):
            return
        for a in loop.assigns:
            outer = a.target_def_loops is not None and loop.id not in a.target_def_loops
            if not outer:
                continue
            if a.kind == "aug" or (a.kind == "bind" and a.target in a.names):
                return
            if a.kind == "store" and (loop.id not in a.index_deps or any(a.target in x.names for x in loop.calls)):
                return
        self.report((loop.start, loop.start), f"{loop.kind} loop has no loop-carried dependency; "
                    "its iterations could be pipelined with affine_range",
                    metrics={"trip_count": loop.trip}, labels={"iterator": loop.kind})
