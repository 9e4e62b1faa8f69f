"""matmul-implicit-transpose: nl.matmul without transpose_x=True."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule
from evidence.static.model import CallInfo
from evidence.static.rulekit import _is_true


class MatmulImplicitTranspose(Rule):
    """Flags `nl.matmul(x, y)` calls without `transpose_x=True`.

    With transpose_x=False the first operand is [M, K] and the compiler inserts a TensorE
    transpose (nc_transpose through PSUM) before every matmul: non-useful PE work, an extra PSUM
    round trip and an extra copy per call (REFERENCE §3.5, §5.3 rule 8).

    `nl.matmul` keeps this signature and lowering in the standalone dialect (0.3+), so the rule
    judges both; `nisa.nc_matmul` takes the stationary operand K-major in both and is never flagged.

    Fix: load the left operand with K on the partition axis (pass lhsT from HBM, or transpose once
    outside the loop) and call `nl.matmul(xT, y, transpose_x=True)` or `nisa.nc_matmul(xT, y)`.
    """

    id = "matmul-implicit-transpose"
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        "import neuronxcc.nki.language as nl\nc = nl.matmul(xT, y, transpose_x=True)\n",
        "import neuronxcc.nki.isa as nisa\nc = nisa.nc_matmul(xT, y)\n",
    ]
    INVALID = [
        Invalid("import neuronxcc.nki.language as nl\nc = nl.matmul(x, y)\n", line=2),
        "import neuronxcc.nki.language as nl\nc = nl.matmul(x, y, transpose_x=False)\n",
        Invalid("import nki.language as nl\nc = nl.matmul(x, y)\n", line=2),
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name == "nl.matmul" and not _is_true(call.arg(2, "transpose_x")):
            trips = 1
            for lp in call.loops:
                trips *= lp.trip or 1
            self.report(call.node, "nl.matmul without transpose_x=True inserts a TensorE transpose of x on every call",
                        metrics={"transposes_per_call": 1, "calls_per_kernel": trips})
