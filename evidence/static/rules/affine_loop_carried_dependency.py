"""affine-loop-carried-dependency: state carried across iterations of an affine_range loop."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import Invalid, Rule, Valid
from evidence.static.model import AssignInfo, CallInfo, LoopInfo
from evidence.static.rulekit import store_target
from evidence.static.shapes import Grid, Index, LoopVar, MultiIndex, Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
_HBM = ("hbm", "shared_hbm", "private_hbm")


class AffineLoopCarriedDependency(Rule):
    """Flags `nl.affine_range` loops whose iterations depend on each other: running state
    rebound from its own previous value, a buffer written at the same location every iteration
    and read earlier in the body, or an output written at a location that ignores the loop index.
    `+=` accumulation (PSUM matmul accumulation, associative reductions) is allowed.

    affine_range promises independent iterations: the compiler may reorder, pipeline and
    vectorise them. A real loop-carried dependency can then give silently wrong results, and
    writing one output location from every iteration raises err_unexpected_output_dependencies
    (REFERENCE §3.3, §5.4). A sequential CPU simulation hides the defect.

    Beta-only: in the standalone dialect (0.3+) `affine_range` is a deprecated alias of Python
    `range`, its iterations run in order, and a carried dependency is legal there.

    Fix: use `nl.sequential_range` for scans and running state, or index the written location
    with the loop variable.
    """

    id = "affine-loop-carried-dependency"
    severity = Severity.critical
    performance = False
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray((512, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n"
              "    for i in nl.affine_range(4):\n        t = nl.load(a[i * 128:(i + 1) * 128, :])\n"
              "        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(t))\n    return out\n",
              inputs={"a": ((512, 64), "float32")}),
        _HEAD + "acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)\nfor k in nl.affine_range(4):\n"
        "    acc += nisa.nc_matmul(a, b)\n",
        _HEAD + "state = nl.zeros((128, 1), nl.float32)\nfor i in nl.sequential_range(4):\n    state = state + 1.0\n",
    ]
    INVALID = [
        Invalid(_HEAD + "state = nl.zeros((128, 1), nl.float32)\nfor i in nl.affine_range(4):\n"
                "    x = nl.load(a[i * 128:(i + 1) * 128, 0:1])\n    state = nl.add(state, x)\n", line=7),
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n"
                "    for i in nl.affine_range(4):\n        t = nl.load(a[i * 128:(i + 1) * 128, :])\n"
                "        nl.store(out[0:128, :], value=t)\n    return out\n",
                inputs={"a": ((512, 64), "float32")}, line=9),
        _HEAD + "init = nl.zeros((128, 1), nl.float32)\nfor i in nl.affine_range(4):\n"
        "    r = nisa.tensor_tensor_scan(x, y, init, op0=nl.multiply, op1=nl.add)\n    init[:, :] = r[:, 511]\n",
    ]

    def _affine(self, loops: tuple[LoopInfo, ...]):
        return [lp for lp in loops if lp.kind == "affine_range" and (lp.trip is None or lp.trip > 1)]

    def on_assign(self, a: AssignInfo) -> None:
        if a.kind == "aug" or a.target is None or a.target_def_loops is None:
            return
        for lp in self._affine(a.loops):
            if lp.id in a.target_def_loops:
                continue  # defined inside this loop: fresh every iteration
            if a.kind == "bind" and a.target in a.names:
                if self._predicate(a.value_node, a.target):
                    return  # a mask rebuilt from its previous value is a trace-time predicate, not device state
                if self._self_copy(a.value_node, a.target):
                    return  # `x = nl.copy(x, dtype=...)`: a copy or cast of itself is the same every iteration
                self.report(a.node, f"'{a.target}' carries state across iterations of affine_range (line {lp.start})",
                            metrics={"loop_line": lp.start, "trip_count": lp.trip}, labels={"pattern": "running_state"})
                return
            if a.kind == "store" and lp.id not in a.index_deps:
                t = a.target_value
                if isinstance(t, Tensor) and t.buffer in _HBM:
                    self._same_output(a.node, a.target, lp)
                    return
                if a.target in a.names or self._read_before(lp, a.target, a.start):
                    self.report(a.node, f"'{a.target}' is read and rewritten at the same location in every iteration "
                                f"of affine_range (line {lp.start})",
                                metrics={"loop_line": lp.start, "trip_count": lp.trip}, labels={"pattern": "carried_buffer"})
                    return

    def on_call(self, call: CallInfo) -> None:
        if call.name not in ("nl.store", "nisa.dma_copy"):
            return
        dst, _ = store_target(self.ctx, call)
        if dst is None:
            return
        deps = self.ctx.deps(dst)[0]
        t = self.ctx.value(dst)
        if not isinstance(t, Tensor) or t.buffer not in _HBM:
            return
        for lp in self._affine(call.loops):
            if lp.id not in deps:
                self._same_output(call.node, t.name or "output", lp)
                return

    def _same_output(self, node, name: str, lp: LoopInfo) -> None:
        self.report(node, f"every iteration of affine_range (line {lp.start}) writes the same location of '{name}'",
                    metrics={"loop_line": lp.start, "trip_count": lp.trip}, labels={"pattern": "same_output_location"})

    def _predicate(self, node, name: str) -> bool:
        """`node` is a mask: comparisons of index expressions (arange/mgrid grids, affine loop variables), joined
        with `&`/`|`, through conditional expressions, with `name` itself (`m = (i_p + 128 * i < n) & m`).
        A mask is a compile-time predicate (REFERENCE §3.2): each iteration's instruction gets its own, fixed while
        tracing, so rebinding one from its previous value carries no data between iterations on the device."""
        if isinstance(node, cst.IfExp):
            return self._predicate(node.body, name) and self._predicate(node.orelse, name)
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.BitAnd, cst.BitOr)):
            return self._predicate(node.left, name) and self._predicate(node.right, name)
        if isinstance(node, cst.Name):
            return node.value == name
        if isinstance(node, cst.Comparison):
            sides = [node.left, *(c.comparator for c in node.comparisons)]
            values = [self.ctx.value(x) for x in sides]
            if any(isinstance(v, (Index, MultiIndex, Grid)) for v in values):
                return True  # an index grid compared with a bound (a tile there would be no predicate at all)
            return (not any(isinstance(v, Tensor) for v in values)
                    and any(isinstance(v, LoopVar) or self.ctx.deps(x)[0] for x, v in zip(sides, values)))
        return False

    def _self_copy(self, node, name: str) -> bool:
        """`node` copies or casts `name` and nothing else (`v = nl.copy(v, dtype=nl.float32)`): idempotent, so the
        value it carries into the next iteration is the one it started with (rounding twice rounds once)."""
        if not isinstance(node, cst.Call) or self.ctx.ev.api_name(node.func) not in ("nl.copy", "nisa.tensor_copy"):
            return False
        data = [a for a in node.args if a.keyword is None or a.keyword.value in ("x", "src", "data")]
        rest = [a for a in node.args if a not in data and a.keyword.value not in ("dtype", "engine", "name")]
        return (len(data) == 1 and not rest and isinstance(data[0].value, cst.Name)
                and data[0].value.value == name)

    @staticmethod
    def _read_before(lp: LoopInfo, name: str, line: int) -> bool:
        return any(name in x.names and x.start < line for x in (*lp.assigns, *lp.calls))
