"""matmul-underfilled: matmul tiles smaller than TensorE allows while the problem has more."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.rulekit import MOVING_FMAX, STATIONARY_FMAX, free_axis_deps, matmul_operands

_KERNEL = """import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

@nki.jit
def k(lhsT, rhs):
    for m in nl.affine_range(2):
        for n in nl.affine_range({trips}):
            res = nl.zeros((128, {n}), nl.float32, buffer=nl.psum)
            a = nl.load(lhsT[0:128, m * 128:(m + 1) * 128])
            b = nl.load(rhs[0:128, n * {n}:(n + 1) * {n}])
            res += nisa.nc_matmul(a, b)
"""


class MatmulUnderfilled(Rule):
    """Flags matmuls whose moving free size is under 512 (or stationary free size under 128)
    while a loop walks that same axis in smaller chunks, so larger tiles were possible: through
    HBM slices, views of an on-chip buffer (`rhs_sb[:, n * 128:(n + 1) * 128]`) or the block
    dimension of one (`rhs_sb[n]`). A loop that also indexes the other operand walks K, not the
    free axis.

    A matmul costs about max(min(64, M), N) TensorE cycles plus fixed overhead; a moving tile of
    128 instead of 512 columns pays the overhead four times and leaves the PSUM bank a quarter
    full. The long operand belongs in the moving slot at 512 (REFERENCE §5.2, §5.3 rule 5).

    Fix: take 512-wide moving tiles (nl.tile_size.gemm_moving_fmax) and 128-wide stationary tiles
    (gemm_stationary_fmax), and shorten the loop over that axis accordingly.
    """

    id = "matmul-underfilled"
    version = "2"
    severity = Severity.medium
    dialects = (BETA, STANDALONE)
    VALID = [
        Valid(_KERNEL.format(trips=2, n=512), inputs={"lhsT": ((128, 256), "bfloat16"), "rhs": ((128, 1024), "bfloat16")}),
        Valid(_KERNEL.format(trips=1, n=256), inputs={"lhsT": ((128, 256), "bfloat16"), "rhs": ((128, 256), "bfloat16")}),
    ]
    VALID.append(Valid(  # the loop walks the rows (K) of the stationary tile, not its 96 free columns
        "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
        "@nki.jit\ndef k(x, ident):\n    i = nl.load(ident)\n    for t in nl.affine_range(2):\n"
        "        xt = nl.load(x[t * 128:(t + 1) * 128, :])\n        y = nisa.nc_matmul(stationary=xt, moving=i)\n",
        inputs={"x": ((256, 96), "float32"), "ident": ((128, 128), "float32")}))
    INVALID = [
        Invalid(_KERNEL.format(trips=8, n=128), inputs={"lhsT": ((128, 256), "bfloat16"), "rhs": ((128, 1024), "bfloat16")},
                line=12),
        # operands kept on chip; the n loop walks 128-wide column views of the moving buffer
        Invalid("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
                "@nki.jit\ndef k(lhsT, rhs):\n    a = nl.load(lhsT)\n    b = nl.load(rhs)\n"
                "    for n in nl.affine_range(8):\n        acc = nl.zeros((128, 128), nl.float32, buffer=nl.psum)\n"
                "        mv = b[:, n * 128:(n + 1) * 128]\n        acc += nisa.nc_matmul(a, mv)\n",
                inputs={"lhsT": ((128, 128), "bfloat16"), "rhs": ((128, 1024), "bfloat16")}, line=11),
        # the loop walks the block dimension of a [NB, 128, 128] buffer of column blocks
        Invalid("import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
                "@nki.jit\ndef k(lhsT, rhs):\n    a = nl.load(lhsT)\n"
                "    b = nl.ndarray((8, nl.par_dim(128), 128), dtype=rhs.dtype, buffer=nl.sbuf)\n"
                "    for n in nl.affine_range(8):\n        b[n] = nl.load(rhs[:, n * 128:(n + 1) * 128])\n"
                "    for n in nl.affine_range(8):\n        acc = nl.zeros((128, 128), nl.float32, buffer=nl.psum)\n"
                "        acc += nisa.nc_matmul(a, b[n])\n",
                inputs={"lhsT": ((128, 128), "bfloat16"), "rhs": ((128, 1024), "bfloat16")}, line=12),
        Invalid("import nki\nimport nki.language as nl\nimport nki.isa as nisa\n"
                "@nki.jit\ndef k(lhsT, rhs):\n    a = nl.load(lhsT)\n    b = nl.load(rhs)\n"
                "    for n in nl.affine_range(8):\n        acc = nl.ndarray((128, 128), nl.float32, buffer=nl.psum)\n"
                "        nisa.nc_matmul(acc, a, b[:, n * 128:(n + 1) * 128])\n",
                inputs={"lhsT": ((128, 128), "bfloat16"), "rhs": ((128, 1024), "bfloat16")}, line=10),
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name not in ("nl.matmul", "nisa.nc_matmul"):
            return
        shift = 1 if call.name == "nisa.nc_matmul" and self.ctx.dialect.dialect == STANDALONE else 0  # dst first
        s_node = call.arg(shift, "stationary" if call.name == "nisa.nc_matmul" else "x")
        m_node = call.arg(shift + 1, "moving" if call.name == "nisa.nc_matmul" else "y")
        _, _, _, m, _, n = matmul_operands(self.ctx, call)
        s_deps = self.ctx.deps(s_node)[0]
        m_deps = self.ctx.deps(m_node)[0]
        metrics: dict[str, float | None] = {}
        msgs = []
        for size, limit, node, other, label in ((n, MOVING_FMAX, m_node, s_deps, "moving"),
                                                (m, STATIONARY_FMAX, s_node, m_deps, "stationary")):
            if size is None or size >= limit:
                continue
            # Loops that index this operand's free axis (and not the other operand) walk it in chunks.
            own = free_axis_deps(self.ctx, node) or frozenset()
            walkers = [lp for lp in call.loops if lp.id in own and lp.id not in other and (lp.trip or 0) > 1]
            if not walkers:
                continue
            allowed = min(limit, size * max(lp.trip or 1 for lp in walkers))
            if allowed > size:
                msgs.append(f"{label} free size {size} (up to {allowed} possible)")
                metrics[f"{label}_free"] = size
                metrics[f"{label}_free_possible"] = allowed
                metrics[f"{label}_loop_trip_count"] = max(lp.trip or 1 for lp in walkers)
        if msgs:
            self.report(call.node, f"{call.name} under-fills TensorE: " + "; ".join(msgs), metrics=metrics)
