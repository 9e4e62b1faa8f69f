"""ragged-without-mask: a tiled loop over an extent that is not (or need not be) a multiple of the tile."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import FunctionInfo, LoopInfo
from evidence.static.rulekit import DMA_CALLS
from evidence.static.shapes import Tensor

_HEAD = "import math\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
_BODY = ("@nki.jit\ndef k(a):\n    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
         "    for i in nl.affine_range({trips}):\n        t = nl.load(a[i * 128:(i + 1) * 128, :]{mask})\n"
         "        nl.store(out[i * 128:(i + 1) * 128, :], value=t{mask})\n    return out\n")
_MASK = ", mask=(i * 128 + nl.arange(128)[:, None] < a.shape[0])"
_ANY_ROWS = {"any_size_dims": (("a", 0),)}  # the task's description: "a [rows, cols]; rows is any positive integer"
_STANDALONE = ("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n@nki.jit\ndef k(a):\n"
               "    rows, cols = a.shape\n{guard}    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
               "    for i in range(rows // 128):\n        t = nl.ndarray((128, cols), dtype=a.dtype, buffer=nl.sbuf)\n"
               "        nisa.dma_copy(dst=t, src=a[i * 128:(i + 1) * 128, :])\n"
               "        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=t)\n    return out\n")


class RaggedWithoutMask(Rule):
    """Flags tile loops over an input extent that is not a multiple of the tile size, either
    with a floor trip count (`N // 128`: the tail is never processed, masks or not, unless a
    transfer after the loop handles it) or a ceiling trip count (`math.ceil(N / 128)`: the last
    tile runs past the end) with no mask on its loads/stores; and floor trip counts over an input
    dimension that the tested shape happens to fill (`rows // 128` with 384 rows) when nothing
    guarantees it: no assertion (`assert rows % 128 == 0`, or an `if` that raises) and no tail step.

    Unwritten output regions hold garbage and static out-of-bounds access is rejected
    (err_tensor_access_out_of_bound); masks cost nothing because the compiler shrinks the
    instruction (REFERENCE §3.2, §5.4). A floor-divided trip count over a runtime dimension
    silently drops the last rows of every other shape unless the kernel asserts divisibility.

    The ceiling form is beta-only: the standalone dialect (0.2+) has no masks; a tile slice past
    the end of a tensor is an out-of-bounds access the compiler and the simulator reject, and the
    fix is a slice bounded with `min()`, not a mask. The floor forms apply to both dialects.

    Fix: iterate `math.ceil(N / T)` tiles and pass `mask=(i * T + ip < N)` to every load, store
    and compute call of the last tile (beta; in nki 0.3+ bound the last slice with `min()`), or
    handle the remainder in a separate tail step; when the task guarantees whole tiles, say so
    with `assert N % T == 0`.
    """

    id = "ragged-without-mask"
    version = "3"
    severity = Severity.high
    performance = False
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_HEAD + _BODY.format(trips="math.ceil(a.shape[0] / 128)", mask=_MASK), inputs={"a": ((300, 64), "float32")}),
    ]
    VALID.append(Valid(  # full tiles in the loop, the remainder in a tail step after it
        _HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    for i in nl.affine_range(a.shape[0] // 128):\n        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(a[i * 128:(i + 1) * 128, :]))\n"
        "    n = a.shape[0] // 128 * 128\n    nl.store(out[n:a.shape[0], :], value=nl.load(a[n:a.shape[0], :]))\n    return out\n",
        inputs={"a": ((300, 64), "float32")}))
    VALID += [
        # the tested shape fills whole tiles and the kernel asserts that every allowed one does
        Valid(_HEAD + _BODY.format(trips="a.shape[0] // 128", mask="").replace(
            "    for i", "    assert a.shape[0] % 128 == 0\n    for i"), inputs={"a": ((512, 64), "float32")},
            options=_ANY_ROWS),
        Valid(_HEAD + _BODY.format(trips="n // 128", mask="").replace(
            "    for i", "    n = a.shape[0]\n    if n % 256:\n        raise ValueError('n')\n    for i"),
            inputs={"a": ((512, 64), "float32")}, options=_ANY_ROWS),
        # a compile-time extent: a constant, not a dimension of an input
        Valid(_HEAD + "N = 512\n" + _BODY.format(trips="N // 128", mask=""), inputs={"a": ((512, 64), "float32")},
              options=_ANY_ROWS),
        Valid(_STANDALONE.format(guard="    assert rows % 128 == 0\n"), inputs={"a": ((384, 64), "float32")},
              options=_ANY_ROWS),
        # the task fixes rows to multiples of 128 (or says nothing): whole tiles are the contract
        Valid(_STANDALONE.format(guard=""), inputs={"a": ((384, 64), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + _BODY.format(trips="a.shape[0] // 128", mask=""), inputs={"a": ((300, 64), "float32")}, line=7),
        # 384 rows fill three tiles, but nothing keeps another row count from dropping its tail
        Invalid(_HEAD + _BODY.format(trips="rows // 128", mask="").replace(
            "    for i", "    rows, cols = a.shape\n    for i"), inputs={"a": ((384, 64), "float32")}, line=8,
            options=_ANY_ROWS),
        Invalid(_STANDALONE.format(guard=""), inputs={"a": ((384, 64), "float32")}, line=9, options=_ANY_ROWS),
        # masks inside the loop do not help when the loop never reaches the tail
        Invalid(_HEAD + _BODY.format(trips="a.shape[0] // 128", mask=_MASK), inputs={"a": ((300, 64), "float32")}, line=7),
        Invalid(_HEAD + _BODY.format(trips="math.ceil(a.shape[0] / 128)", mask=""), inputs={"a": ((300, 64), "float32")}, line=7),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._pending: list[tuple[LoopInfo, str, int, int]] = []
        self._guards: list[tuple[int, int]] = []  # (extent, modulus) of `assert n % m == 0` / `if n % m: raise`

    def visit_Assert(self, node: cst.Assert) -> None:
        self._guard(node.test)

    def visit_If(self, node: cst.If) -> None:
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
        if any(isinstance(s, cst.SimpleStatementLine) and any(isinstance(x, cst.Raise) for x in s.body) for s in body):
            self._guard(node.test)

    def _guard(self, test: cst.BaseExpression) -> None:
        for node in _walk(test):
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Modulo):
                n, m = self.ctx.value(node.left), self.ctx.value(node.right)
                if _ints(n, m):
                    self._guards.append((n, m))

    def enter_loop(self, loop: LoopInfo) -> None:
        expr = loop.trip_expr
        ev = self.ctx.value
        if isinstance(expr, cst.Call) and self.ctx.ev.api_name(expr.func) == "math.ceil" and expr.args:
            inner = expr.args[0].value
            if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Divide):
                n, t = ev(inner.left), ev(inner.right)
                if _ints(n, t) and n % t:
                    self._pending.append((loop, "ceil", n, t))
        elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.FloorDivide):
            num, t = ev(expr.left), ev(expr.right)
            if not _ints(num, t):
                return
            if num % t == 0:
                if t > 1 and not isinstance(expr.left, cst.BinaryOperation) and self._any_size(expr.left, num):
                    self._pending.append((loop, "unguarded", num, t))
                return
            if isinstance(expr.left, cst.BinaryOperation) and isinstance(expr.left.operator, (cst.Add, cst.Subtract)):
                n = num - (t - 1)  # (N + T - 1) // T
                if n % t:
                    self._pending.append((loop, "ceil", n, t))
            else:
                self._pending.append((loop, "floor", num, t))

    def leave_function(self, fn: FunctionInfo) -> None:
        for loop, kind, n, t in self._pending:
            if loop.function is not fn:
                continue
            dmas = [c for c in loop.calls if c.name in DMA_CALLS]
            # a separate tail step: a transfer after the loop handles the remaining rows
            tail_step = any(c.name in DMA_CALLS and c.start > loop.end for c in fn.calls)
            if kind == "unguarded" and not tail_step and not any(g == n and m % t == 0 for g, m in self._guards):
                self.report((loop.start, loop.start), f"loop runs {n} // {t} = {n // t} tiles of an input dimension the "
                            f"task lets take any size, with no assertion that it is a multiple of {t} and no tail step: "
                            f"the tested {n} fill whole tiles, but for {n + t // 3} the last {t // 3} would never be "
                            "processed",
                            metrics={"extent": n, "tile": t, "remainder": 0, "trip_count": n // t},
                            labels={"pattern": "unguarded_floor"}, severity=Severity.medium)
            elif kind == "floor" and not tail_step:
                self.report((loop.start, loop.start), f"loop runs {n} // {t} = {n // t} tiles; the last {n % t} rows "
                            "are never processed", metrics={"extent": n, "tile": t, "remainder": n % t, "trip_count": n // t},
                            labels={"pattern": "dropped_tail"})
            elif kind == "ceil" and dmas and not any(c.has_kw("mask") for c in dmas) and self.ctx.dialect.dialect != STANDALONE:
                # (nki 0.3+ has no masks to ask for: a slice past the end is an out-of-bounds error there)
                self.report((loop.start, loop.start), f"last of ceil({n} / {t}) tiles overruns the extent and its "
                            "loads/stores have no mask", metrics={"extent": n, "tile": t, "remainder": n % t,
                                                                "trip_count": -(-n // t)}, labels={"pattern": "unmasked_tail"})
        self._pending = [p for p in self._pending if p[0].function is not fn]


    def _any_size(self, node: cst.BaseExpression, extent: int) -> bool:
        """`node` is a dimension of an input (`x.shape[0]`, or a name bound from one) that the task says
        may be any size (option `any_size_dims`, from its description): only then is a floor over a
        whole number of tiles a gap. Unknown contracts and corpus kernels without a task yield False."""
        declared = self.ctx.options.get("any_size_dims") or ()
        if not declared:
            return False
        inputs = {i.name: i for i in self.ctx.inputs}
        fn = self.ctx.function
        for tensor in self._input_tensors(node):
            spec = inputs.get(tensor.name)
            if spec is None and fn is not None and tensor.name in fn.params:  # bound by position
                at = fn.params.index(tensor.name)
                spec = self.ctx.inputs[at] if at < len(self.ctx.inputs) else None
            if spec is None:
                continue
            sizes = {axis: n for axis, n in enumerate(spec.shape) if n == extent}
            if sizes and all((spec.name, axis) in declared for axis in sizes):
                return True
        return False

    def _input_tensors(self, node: cst.CSTNode, depth: int = 0):
        """The input tensors whose `.shape` `node` reads, directly or through names bound from it."""
        if depth > 8:
            return
        if isinstance(node, cst.Attribute) and node.attr.value == "shape":
            base = self.ctx.value(node.value)
            if isinstance(base, Tensor) and base.origin == "input":
                yield base
            return
        if isinstance(node, cst.Name):
            b = self.ctx.lookup(node.value)
            if b is not None and b.node is not None:
                yield from self._input_tensors(b.node, depth + 1)
            return
        for child in node.children:
            yield from self._input_tensors(child, depth + 1)


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)


def _ints(*vals: object) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in vals)
