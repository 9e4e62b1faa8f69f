"""store-into-input: writes into a kernel input that is not declared mutable."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule
from evidence.static.model import AssignInfo, CallInfo, FunctionInfo
from evidence.static.rulekit import store_target
from evidence.static.shapes import Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.typing as nt\n"
_SA = "import nki\nimport nki.language as nl\n"


class StoreIntoInput(Rule):
    """Flags stores (nl.store, dma_copy, atomic_rmw, `x[...] = `) into a kernel parameter of a
    kernel that returns its outputs, unless the parameter is annotated `nt.mutable_tensor`.

    Since Neuron 2.21 kernel inputs are immutable: the compiler raises
    err_cannot_update_immutable_parameter, and frameworks may alias the input buffer, so an
    in-place write corrupts the caller's tensor (REFERENCE §2, §3.1). Kernels in the old style
    (outputs as trailing parameters, no return value) are not flagged. The standalone dialect
    has no mutable annotation: a kernel there may update an argument in place when it returns that
    argument (the aliasing is then explicit), so only writes into arguments it does not return
    are flagged.

    Only kernels are judged, not helpers (in the kernel file or a helper module): a helper's
    parameters are whatever its callers pass, usually the caller's own output or scratch tile, so
    a write through one is legal there; a helper writing a kernel input it was handed is a miss of
    this rule, not a finding.

    Fix: allocate the output with `nl.ndarray(..., buffer=nl.shared_hbm)` and return it, or
    annotate the parameter `nt.mutable_tensor` and return it.
    """

    id = "store-into-input"
    severity = Severity.critical
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        _HEAD + "@nki.jit\ndef k(a, b: nt.mutable_tensor):\n    t = nl.load(a)\n    nl.store(b, value=t)\n    return b\n",
        _HEAD + "@nki.jit\ndef k(a, out):\n    t = nl.load(a)\n    nl.store(out, value=t)\n",
        _SA + "@nki.jit\ndef k(a, b):\n    t = nl.load(a)\n    nl.store(b, value=t)\n    return b\n",
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    t = nl.load(a)\n    nl.store(a, value=nl.exp(t))\n    return a\n", line=7),
        Invalid(_SA + "@nki.jit\ndef k(a, b):\n    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
                "    t = nl.load(a)\n    nl.store(a, value=t)\n    nl.store(out, value=t)\n    return out\n", line=7),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._writes: list[tuple[cst.CSTNode, str]] = []

    def _input(self, node: cst.BaseExpression | None) -> str | None:
        while isinstance(node, (cst.Subscript, cst.Attribute)):
            node = node.value
        if not isinstance(node, cst.Name):
            return None
        b = self.ctx.lookup(node.value)
        t = b.value if b is not None else None
        if isinstance(t, Tensor) and t.origin == "input" and not t.mutable:
            return node.value
        return None

    def on_call(self, call: CallInfo) -> None:
        if call.name in ("nl.store", "nisa.dma_copy", "nl.atomic_rmw"):
            name = self._input(store_target(self.ctx, call)[0])
            if name:
                self._writes.append((call.node, name))

    def on_assign(self, a: AssignInfo) -> None:
        if a.kind in ("store", "aug") and a.subscripted:
            t = a.target_value
            if isinstance(t, Tensor) and t.origin == "input" and not t.mutable and a.target:
                self._writes.append((a.node, a.target))

    def leave_function(self, fn: FunctionInfo) -> None:
        writes, self._writes = self._writes, []
        if not fn.is_kernel or not fn.returns_value:
            return
        returned = _returned_names(fn.node) if self.ctx.dialect.dialect == STANDALONE else set()
        for node, name in writes:
            if name in returned:
                continue
            self.report(node, f"kernel writes into its input '{name}', which is not declared nt.mutable_tensor",
                        labels={"parameter": name})


def _returned_names(fn: cst.FunctionDef) -> set[str]:
    """Names the function returns directly (`return y`, `return out, y`), nested functions aside."""
    found: set[str] = set()

    class _Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_Return(self, node: cst.Return) -> None:
            value = node.value
            items = value.elements if isinstance(value, (cst.Tuple, cst.List)) else [value] if value else []
            for el in items:
                v = el.value if isinstance(el, (cst.Element,)) else el
                if isinstance(v, cst.Name):
                    found.add(v.value)

    fn.visit(_Returns())
    return found
