"""shared-hbm-nested: a shared_hbm tensor created inside a loop, branch or helper."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule
from evidence.static.model import CallInfo
from evidence.static.shapes import ALLOC_CALLS

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"


class SharedHbmNested(Rule):
    """Flags `buffer=nl.shared_hbm` allocations made inside a loop, an `if`/`with` block or a
    helper function instead of at the kernel's top level.

    shared_hbm tensors are the kernel's outputs, visible to every SPMD instance; the compiler
    accepts them only at kernel level (err_shared_hbm_must_in_kernel_level), since a nested one
    would be created per iteration or per call (REFERENCE §1, §2).

    Fix: allocate outputs once at the top of the kernel body and write into slices of them from
    the loops.
    """

    id = "shared-hbm-nested"
    severity = Severity.critical
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [_HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    return out\n"]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(2):\n"
                "        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n", line=6),
        _HEAD + "def helper(a):\n    return nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n",
    ]

    def on_call(self, call: CallInfo) -> None:
        if call.name not in ALLOC_CALLS or call.tensor is None or call.tensor.buffer != "shared_hbm":
            return
        fn = call.function
        if call.nested > 0:
            self.report(call.node, "shared_hbm tensor created inside a nested block", labels={"scope": "block"})
        elif fn is not None and not fn.is_kernel:
            self.report(call.node, f"shared_hbm tensor created in helper '{fn.name}'", labels={"scope": "helper"})
