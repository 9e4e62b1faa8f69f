"""matmul-operand-limits: matmul operands over the TensorE limits."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import P_MAX, STATIONARY_FMAX, matmul_operands, moving_fmax
from evidence.static.shapes import MATMUL_CALLS

_HEAD = "import neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"


class MatmulOperandLimits(Rule):
    """Flags matmuls whose contraction size K exceeds 128, stationary free size M exceeds 128,
    moving free size N exceeds 512 (4096 when the task targets trn3), or whose two operands disagree on K.

    TensorE is a 128x128 systolic array: the stationary operand is [K<=128, M<=128] and the moving
    operand [K<=128, N<=512], with K on the partition axis of both (TC#3, LC#1); the output
    [M, N] fp32 must fit one PSUM bank. Larger operands do not compile.

    Fix: tile K in chunks of 128 and accumulate into PSUM with `+=`; tile M by 128 and N by 512.
    """

    id = "matmul-operand-limits"
    severity = Severity.critical
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        _HEAD + "a = nl.ndarray((128, 128), dtype=nl.bfloat16)\nb = nl.ndarray((128, 512), dtype=nl.bfloat16)\n"
        "c = nisa.nc_matmul(a, b)\n",
        _HEAD + "x = nl.ndarray((64, 128), dtype=nl.bfloat16)\ny = nl.ndarray((128, 256), dtype=nl.bfloat16)\n"
        "c = nl.matmul(x, y)\n",
        Valid(_HEAD + "a = nl.ndarray((128, 128), dtype=nl.bfloat16)\nb = nl.ndarray((128, 2048), dtype=nl.bfloat16)\n"
              "c = nisa.nc_matmul(a, b)\n", options={"target": "trn3"}),
    ]
    INVALID = [
        Invalid(_HEAD + "a = nl.ndarray((128, 128), dtype=nl.bfloat16)\nb = nl.ndarray((128, 1024), dtype=nl.bfloat16)\n"
                "c = nisa.nc_matmul(a, b)\n", line=5),
        Invalid(_HEAD + "a = nl.ndarray((128, 128), dtype=nl.bfloat16)\nb = nl.ndarray((128, 8192), dtype=nl.bfloat16)\n"
                "c = nisa.nc_matmul(a, b)\n", line=5, options={"target": "trn3"}),
        _HEAD + "x = nl.ndarray((128, 256), dtype=nl.bfloat16)\ny = nl.ndarray((128, 512), dtype=nl.bfloat16)\n"
        "c = nl.matmul(x, y, transpose_x=True)\n",
        _HEAD + "a = nl.ndarray((64, 128), dtype=nl.bfloat16)\nb = nl.ndarray((128, 512), dtype=nl.bfloat16)\n"
        "c = nisa.nc_matmul(a, b)\n",
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name not in MATMUL_CALLS:
            return
        _, _, ks, m, km, n = matmul_operands(self.ctx, call)
        problems = []
        for label, value, limit in (("K (stationary)", ks, P_MAX), ("K (moving)", km, P_MAX),
                                    ("M (stationary free)", m, STATIONARY_FMAX), ("N (moving free)", n, moving_fmax(self.ctx.options))):
            if value is not None and value > limit:
                problems.append(f"{label} = {value} > {limit}")
        if ks is not None and km is not None and ks != km:
            problems.append(f"K mismatch: stationary {ks} vs moving {km}")
        if problems:
            self.report(call.node, f"{call.name} operands exceed TensorE limits: " + "; ".join(problems),
                        metrics={"K": ks if ks is not None else km, "M": m, "N": n})
