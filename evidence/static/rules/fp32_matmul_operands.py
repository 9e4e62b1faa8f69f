"""fp32-matmul-operands: TensorE fed with fp32 operands (quarter rate)."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import matmul_operands


class Fp32MatmulOperands(Rule):
    """Flags matmuls whose operands are float32.

    TensorE runs fp32 at a quarter of the bf16/fp16/tf32 rate (about 20 vs 79 TFLOPS per Trn2
    core) while accumulating in fp32 PSUM either way, so fp32 operands cost 4x for little accuracy
    gain (REFERENCE §4, §5.2). Acceptable only when the task demands fp32 products (a
    tolerance tighter than bf16 allows), which the collector passes as `fp32_required`.

    Fix: load or cast the operands to bfloat16 (or tf32/fp8) before the matmul; keep fp32 for
    the PSUM accumulator and the statistics.
    """

    id = "fp32-matmul-operands"
    criteria = ("performance", "precision")
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid("def k(a, b):\n    x = nl.load(a)\n    y = nl.load(b)\n    c = nisa.nc_matmul(x, y)\n",
              inputs={"a": ((128, 128), "bfloat16"), "b": ((128, 512), "bfloat16")}),
        Valid("def k(a, b):\n    x = nl.load(a, dtype=nl.bfloat16)\n    y = nl.load(b, dtype=nl.bfloat16)\n"
              "    c = nisa.nc_matmul(x, y)\n", inputs={"a": ((128, 128), "float32"), "b": ((128, 512), "float32")}),
    ]
    INVALID = [
        Invalid("@nki.jit\ndef k(a, b):\n    x = nl.load(a)\n    y = nl.load(b)\n    c = nisa.nc_matmul(x, y)\n",
                inputs={"a": ((128, 128), "float32"), "b": ((128, 512), "float32")}, line=5),
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name not in ("nl.matmul", "nisa.nc_matmul") or self.ctx.options.get("fp32_required"):
            return
        s, m, *_ = matmul_operands(self.ctx, call)
        dtypes = [t.dtype for t in (s, m) if t is not None]
        if "float32" in dtypes:
            self.report(call.node, f"{call.name} with float32 operands runs TensorE at 1/4 rate",
                        metrics={"rate_penalty": 4}, labels={"operand_dtypes": ",".join(d or "?" for d in dtypes)})
