"""Small helpers shared by rules: tensor arguments, loop invariance, formatting."""

from __future__ import annotations

from evidence.static.model import CallInfo, LoopInfo
from evidence.static.shapes import Tensor

P_MAX = 128
PSUM_BANK_BYTES = 2048
MOVING_FMAX = 512
STATIONARY_FMAX = 128
_V4_TARGETS = frozenset({"trn3"})  # NeuronCore-v4 (REFERENCE §2): wider matmuls, PSUM tiles over several banks


def moving_fmax(options: dict | None) -> int:
    """The moving operand's free-size limit on the task's target: 512 on v2/v3, 4096 (fp32 dst) on v4."""
    return 4096 if (options or {}).get("target") in _V4_TARGETS else MOVING_FMAX


def psum_tile_bytes(options: dict | None) -> int:
    """The largest PSUM tile per partition: one 2 KiB bank on v2/v3; all 8 banks (a 4096-wide fp32 matmul
    output) on v4."""
    return 8 * PSUM_BANK_BYTES if (options or {}).get("target") in _V4_TARGETS else PSUM_BANK_BYTES
ELEMENTWISE = frozenset({
    "nl.exp", "nl.log", "nl.tanh", "nl.sigmoid", "nl.relu", "nl.gelu", "nl.silu", "nl.add", "nl.subtract",
    "nl.multiply", "nl.divide", "nl.maximum", "nl.minimum", "nl.sqrt", "nl.rsqrt", "nl.square",
    "nl.negative", "nl.abs", "nl.reciprocal", "nl.copy", "nisa.activation", "nisa.tensor_tensor",
    "nisa.tensor_scalar", "nisa.tensor_copy", "nl.where", "nl.erf", "nl.softplus", "nl.mish",
})
ACTIVATIONS = frozenset({
    "nl.exp", "nl.log", "nl.tanh", "nl.sigmoid", "nl.relu", "nl.gelu", "nl.silu", "nl.erf", "nl.softplus",
    "nl.mish", "nl.sqrt", "nl.rsqrt", "nl.gelu_apprx_tanh", "nl.square",
})
DMA_CALLS = frozenset({"nl.load", "nl.store", "nl.load_transpose2d", "nisa.dma_copy"})


def tensor_arg(ctx, call: CallInfo, index: int | None, keyword: str | None = None) -> Tensor | None:
    v = ctx.value(call.arg(index, keyword))
    return v if isinstance(v, Tensor) else None


def invariant_loops(deps: frozenset[int], loops: tuple[LoopInfo, ...]) -> list[LoopInfo]:
    """Enclosing loops, innermost first, that `deps` does not depend on (stops at the first it does)."""
    out = []
    for loop in reversed(loops):
        if loop.id in deps:
            break
        out.append(loop)
    return out


def shape_text(t: Tensor | None) -> str:
    if t is None or t.shape is None:
        return "[?]"
    return "[" + ", ".join("?" if d is None else str(d) for d in t.shape) + "]"


HBM_BUFFERS = frozenset({"hbm", "shared_hbm", "private_hbm"})


def standalone(ctx) -> bool:
    return ctx.dialect.dialect == "standalone"


def dst_node(ctx, call: CallInfo):
    """The destination argument of a standalone (dst-first) `nisa.*` call; None otherwise."""
    if not standalone(ctx) or not call.name.startswith("nisa."):
        return None
    return call.arg(0, "dst")


def root_name(node) -> str | None:
    """`acc` of `acc`, `acc[...]`, `acc[:, k, :]` or `acc.ap(...)`."""
    import libcst as cst

    while True:
        if isinstance(node, cst.Subscript):
            node = node.value
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            node = node.func.value
        elif isinstance(node, cst.Attribute):
            node = node.value
        else:
            break
    return node.value if isinstance(node, cst.Name) else None


def is_hbm(t: object) -> bool:
    return isinstance(t, Tensor) and (t.buffer in HBM_BUFFERS or t.origin == "input")


def dma_copy_load(ctx, call: CallInfo):
    """(source node, source Tensor) of a `nisa.dma_copy` from HBM to an on-chip tile (the
    standalone dialect's load; beta kernels write `nl.load`); None for any other call."""
    if call.name != "nisa.dma_copy":
        return None
    dst, src = store_target(ctx, call)
    sv, dv = ctx.value(src), ctx.value(dst)
    if is_hbm(sv) and isinstance(dv, Tensor) and not is_hbm(dv):
        return src, sv
    return None


def store_target(ctx, call: CallInfo):
    """(destination node, value node) of nl.store / nisa.dma_copy / nl.atomic_rmw."""
    if call.name == "nisa.dma_copy":
        dst = call.arg(None, "dst")
        if dst is None and ctx.dialect.dialect == "standalone":
            dst = call.arg(0)
        return dst, call.arg(None, "src") or call.arg(1)
    return call.arg(0, "dst"), call.arg(1, "value")


def matmul_operands(ctx, call: CallInfo):
    """(stationary, moving, K_stationary, M, K_moving, N) of a matmul call; None entries if unknown."""
    if call.name == "nisa.nc_matmul":
        shift = 1 if ctx.dialect.dialect == "standalone" else 0  # standalone nisa calls take dst first
        s, m = tensor_arg(ctx, call, shift, "stationary"), tensor_arg(ctx, call, shift + 1, "moving")
        ks = s.shape[0] if s and s.shape else None
        mm = s.shape[-1] if s and s.shape and len(s.shape) > 1 else None
    else:
        s, m = tensor_arg(ctx, call, 0, "x"), tensor_arg(ctx, call, 1, "y")
        tx = _is_true(call.arg(None, "transpose_x"))
        if s and s.shape and len(s.shape) >= 2:
            ks, mm = (s.shape[0], s.shape[-1]) if tx else (s.shape[-1], s.shape[0])
        else:
            ks = mm = None
    km = m.shape[0] if m and m.shape else None
    n = m.shape[-1] if m and m.shape and len(m.shape) > 1 else None
    return s, m, ks, mm, km, n


def _is_true(node) -> bool:
    import libcst as cst

    return isinstance(node, cst.Name) and node.value == "True"


def free_axis_deps(ctx, node) -> frozenset[int] | None:
    """Loops whose variables index the free axes of an operand (looking through a name bound to
    an nl.load of an HBM slice); None when the operand's indexing is not visible."""
    import libcst as cst

    if isinstance(node, cst.Name):
        b = ctx.lookup(node.value)
        src = b.node if b is not None else None
        if isinstance(src, cst.Call) and ctx.ev.api_name(src.func) in ("nl.load", "nl.load_transpose2d") and src.args:
            node = src.args[0].value
        elif isinstance(src, cst.Subscript):  # a view of an on-chip buffer: `moving = rhs_sb[:, n * 128:...]`
            node = src
        else:
            return None
    if not isinstance(node, cst.Subscript):
        return None
    base = ctx.value(node.value)
    pdim = base.pdim if isinstance(base, Tensor) else 0
    deps: frozenset[int] = frozenset()
    # Block dimensions (before the partition axis) count too: `rhs_sb[n]` walks column blocks of the operand.
    for i, el in enumerate(node.slice):
        if i != pdim:
            deps |= ctx.deps(el.slice)[0]
    return deps
