"""ragged-without-mask: a tiled loop over an extent that is not a multiple of the tile."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import Invalid, Rule, Valid
from evidence.static.model import FunctionInfo, LoopInfo
from evidence.static.rulekit import DMA_CALLS

_HEAD = "import math\nimport neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
_BODY = ("@nki.jit\ndef k(a):\n    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
         "    for i in nl.affine_range({trips}):\n        t = nl.load(a[i * 128:(i + 1) * 128, :]{mask})\n"
         "        nl.store(out[i * 128:(i + 1) * 128, :], value=t{mask})\n    return out\n")
_MASK = ", mask=(i * 128 + nl.arange(128)[:, None] < a.shape[0])"


class RaggedWithoutMask(Rule):
    """Flags tile loops over an input extent that is not a multiple of the tile size, either
    with a floor trip count (`N // 128`: the tail is never processed, masks or not, unless a
    transfer after the loop handles it) or a ceiling trip count (`math.ceil(N / 128)`: the last
    tile runs past the end) with no mask on its loads/stores.

    Unwritten output regions hold garbage and static out-of-bounds access is rejected
    (err_tensor_access_out_of_bound); masks cost nothing because the compiler shrinks the
    instruction (REFERENCE §3.2, §5.4).

    Beta-only: the standalone dialect (0.2+) has no masks; a tile slice past the end of a tensor
    is an out-of-bounds access the compiler and the simulator reject, and the fix is a slice
    bounded with `min()`, not a mask.

    Fix: iterate `math.ceil(N / T)` tiles and pass `mask=(i * T + ip < N)` to every load, store
    and compute call of the last tile, or handle the remainder in a separate tail step.
    """

    id = "ragged-without-mask"
    version = "2"
    severity = Severity.high
    performance = False
    VALID = [
        Valid(_HEAD + _BODY.format(trips="a.shape[0] // 128", mask=""), inputs={"a": ((512, 64), "float32")}),
        Valid(_HEAD + _BODY.format(trips="math.ceil(a.shape[0] / 128)", mask=_MASK), inputs={"a": ((300, 64), "float32")}),
    ]
    VALID.append(Valid(  # full tiles in the loop, the remainder in a tail step after it
        _HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
        "    for i in nl.affine_range(a.shape[0] // 128):\n        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(a[i * 128:(i + 1) * 128, :]))\n"
        "    n = a.shape[0] // 128 * 128\n    nl.store(out[n:a.shape[0], :], value=nl.load(a[n:a.shape[0], :]))\n    return out\n",
        inputs={"a": ((300, 64), "float32")}))
    INVALID = [
        Invalid(_HEAD + _BODY.format(trips="a.shape[0] // 128", mask=""), inputs={"a": ((300, 64), "float32")}, line=7),
        # masks inside the loop do not help when the loop never reaches the tail
        Invalid(_HEAD + _BODY.format(trips="a.shape[0] // 128", mask=_MASK), inputs={"a": ((300, 64), "float32")}, line=7),
        Invalid(_HEAD + _BODY.format(trips="math.ceil(a.shape[0] / 128)", mask=""), inputs={"a": ((300, 64), "float32")}, line=7),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._pending: list[tuple[LoopInfo, str, int, int]] = []

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
            if not _ints(num, t) or num % t == 0:
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
            if kind == "floor" and not tail_step:
                self.report((loop.start, loop.start), f"loop runs {n} // {t} = {n // t} tiles; the last {n % t} rows "
                            "are never processed", metrics={"extent": n, "tile": t, "remainder": n % t, "trip_count": n // t},
                            labels={"pattern": "dropped_tail"})
            elif kind == "ceil" and dmas and not any(c.has_kw("mask") for c in dmas):
                self.report((loop.start, loop.start), f"last of ceil({n} / {t}) tiles overruns the extent and its "
                            "loads/stores have no mask", metrics={"extent": n, "tile": t, "remainder": n % t,
                                                                "trip_count": -(-n // t)}, labels={"pattern": "unmasked_tail"})
        self._pending = [p for p in self._pending if p[0].function is not fn]


def _ints(*vals: object) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in vals)
