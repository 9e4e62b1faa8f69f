"""fp32-matmul-operands: TensorE fed with fp32 operands (quarter rate)."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo, FunctionInfo
from evidence.static.rulekit import matmul_operands
from evidence.static.shapes import ALLOC_CALLS, LOW_PRECISION, Tensor

_HBM = ("shared_hbm", "hbm", "private_hbm")


class Fp32MatmulOperands(Rule):
    """Flags matmuls whose operands are float32.

    TensorE runs fp32 at a quarter of the bf16/fp16/tf32 rate (about 20 vs 79 TFLOPS per Trn2
    core) while accumulating in fp32 PSUM either way, so fp32 operands cost 4x for little accuracy
    gain (REFERENCE §4, §5.2). Acceptable when the task demands fp32 products: a stated tolerance
    tighter than bf16 allows (the collector passes `fp32_required`) raises nothing; a task that
    states no tolerance on an fp32 output is compared at the fp32 default, so there the finding is
    only a low-severity performance note on the author's accuracy choice.

    A ones-vector matmul (one operand filled with ones by `nl.ones`/`nl.full(..., 1)`/`memset`) is a
    cross-partition reduction of the other operand: keeping fp32 partial sums fp32 there is the
    precision a faithful port needs, not a wasted rate, so it is not flagged.

    A matmul in transpose mode (`nc_matmul(..., is_transpose=True)`, v3) moves its data through
    TensorE bit-exactly (REFERENCE §3.5, `nc_transpose`): fp32 there is the dtype of the values being
    transposed, which a bf16 cast would round, not a product's precision: not flagged.

    Fix: load or cast the operands to bfloat16 (or tf32/fp8) before the matmul; keep fp32 for
    the PSUM accumulator and the statistics.
    """

    id = "fp32-matmul-operands"
    version = "3"  # 3: a transpose-mode matmul (is_transpose=True) is not flagged
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid("def k(a, b):\n    x = nl.load(a)\n    y = nl.load(b)\n    c = nisa.nc_matmul(x, y)\n",
              inputs={"a": ((128, 128), "bfloat16"), "b": ((128, 512), "bfloat16")}),
        Valid("def k(a, b):\n    x = nl.load(a, dtype=nl.bfloat16)\n    y = nl.load(b, dtype=nl.bfloat16)\n"
              "    c = nisa.nc_matmul(x, y)\n", inputs={"a": ((128, 128), "float32"), "b": ((128, 512), "float32")}),
        # a ones-vector matmul summing fp32 partial sums across partitions
        Valid("@nki.jit\ndef k(a):\n    ones = nl.ones((128, 1), dtype=nl.float32)\n    x = nl.load(a)\n"
              "    s = nisa.nc_matmul(ones, x)\n", inputs={"a": ((128, 512), "float32")}),
        Valid("@nki.jit\ndef k(a):\n    ones = nl.full((128, 128), 1.0, dtype=nl.float32)\n    x = nl.load(a)\n"
              "    s = nl.matmul(x, ones[:, 0:1], transpose_x=True)\n", inputs={"a": ((128, 512), "float32")}),
        # a TensorE transpose of fp32 values (transpose mode: bit-exact data movement)
        Valid("import nki\nimport nki.isa as nisa\nimport nki.language as nl\n@nki.jit\ndef k(a, ident):\n"
              "    x = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)\n    nisa.dma_copy(dst=x, src=a)\n"
              "    i = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)\n    nisa.dma_copy(dst=i, src=ident)\n"
              "    t = nl.ndarray((1, 128), dtype=nl.float32, buffer=nl.psum)\n"
              "    nisa.nc_matmul(dst=t, stationary=x, moving=i, is_transpose=True)\n",
              inputs={"a": ((128, 1), "float32"), "ident": ((128, 128), "float32")}),
    ]
    INVALID = [
        Invalid("@nki.jit\ndef k(a, b):\n    x = nl.load(a)\n    y = nl.load(b)\n    c = nisa.nc_matmul(x, y)\n",
                inputs={"a": ((128, 128), "float32"), "b": ((128, 512), "float32")}, line=5),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._pending: dict[int, list[tuple[CallInfo, list[str]]]] = {}

    def on_call(self, call: CallInfo) -> None:
        if call.name not in ("nl.matmul", "nisa.nc_matmul") or self.ctx.options.get("fp32_required"):
            return
        s, m, *_ = matmul_operands(self.ctx, call)
        if any(self._is_ones(a.value) for a in call.node.args):  # a ones-vector reduction
            return
        if self.ctx.value(call.arg(None, "is_transpose")) is True:  # a bit-exact PE transpose, not a product
            return
        dtypes = [t.dtype or "?" for t in (s, m) if t is not None]
        if "float32" in dtypes:  # judged at the end of the function, once its output dtype is known
            self._pending.setdefault(id(call.function), []).append((call, dtypes))

    def _is_ones(self, node: cst.BaseExpression) -> bool:
        """An operand filled with ones: `nl.ones(...)`, `nl.full(..., 1.0)` (or a view of one)."""
        while isinstance(node, cst.Subscript):
            node = node.value
        if isinstance(node, cst.Name):
            b = self.ctx.lookup(node.value)
            node = b.node if b is not None else None
        if not isinstance(node, cst.Call):
            return False
        name = self.ctx.ev.api_name(node.func)
        if name in ("nl.ones", "nl.ones_like"):
            return True
        if name == "nl.full":
            fill = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "fill_value"),
                        node.args[1].value if len(node.args) > 1 and node.args[1].keyword is None else None)
            return self.ctx.value(fill) in (1, 1.0)
        return False

    def _output_dtype(self, function: FunctionInfo) -> str | None:
        """dtype of the function's HBM output allocation; else the common dtype of the tensor inputs."""
        outs = {c.value.dtype for c in function.calls
                if c.name in ALLOC_CALLS and isinstance(c.value, Tensor) and c.value.buffer in _HBM and c.value.dtype}
        if len(outs) == 1:
            return outs.pop()
        ins = {i.dtype for i in self.ctx.inputs if i.value is None}
        return ins.pop() if len(ins) == 1 and not outs else None

    def leave_function(self, function: FunctionInfo) -> None:
        pending = self._pending.pop(id(function), None)
        if not pending:
            return
        severity, labels = None, {}
        if "task_rtol" not in self.ctx.options:  # no task facts (bare analysis): the generic reading
            why = "bf16 operands would likely meet a bf16-level tolerance"
        elif (rtol := self.ctx.options["task_rtol"]) is not None:
            why = f"the task's stated rtol {rtol:g} does not need fp32 products (bf16 keeps 8 significant bits)"
            labels = {"tolerance": "stated", "task_rtol": f"{rtol:g}"}
        else:
            out = self._output_dtype(function)
            labels = {"tolerance": "unstated", "output_dtype": out or "unknown"}
            if out in LOW_PRECISION:
                why = (f"the task states no tolerance and the {out} output is compared at its own "
                       f"{out}-level default tolerance, which bf16 operands meet")
            else:
                # fp32 output, no stated tolerance: the fp32 default applies and bf16 products may miss it.
                severity = Severity.low
                why = ("the task states no tolerance, so the fp32 output is compared at the fp32-level default "
                       "tolerance, which bf16 products may not meet: the author's accuracy choice, a rate cost "
                       "rather than a precision flaw")
        for call, dtypes in pending:
            self.report(call.node, f"{call.name} with float32 operands runs TensorE at 1/4 rate; {why}",
                        metrics={"rate_penalty": 4}, severity=severity,
                        labels={"operand_dtypes": ",".join(dtypes), **labels})
