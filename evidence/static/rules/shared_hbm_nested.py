"""shared-hbm-nested: a shared_hbm tensor created inside a loop, block or helper."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import CallInfo
from evidence.static.shapes import ALLOC_CALLS, Tensor

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"


class SharedHbmNested(Rule):
    """Flags `buffer=nl.shared_hbm` allocations made inside a loop, a `while`/`with`/`try` block
    or a helper function instead of at the kernel's top level.

    shared_hbm tensors are the kernel's outputs, visible to every SPMD instance; the compiler
    accepts them only at kernel level (err_shared_hbm_must_in_kernel_level), since a nested one
    would be created per iteration or per call (REFERENCE §1, §2).

    An `if` on a Python value outside any loop (`if config.training:`) is decided while the kernel
    is traced: the compiler sees the allocation at kernel level or not at all, so it is not
    flagged. An `if` on a tile (a runtime condition) still is.

    A kernel whose decorator passes `experimental_flags='...skip-non-top-level-shared-hbm-check...'` tells
    the compiler to skip exactly this check (the neuron-team decode attention creates a reduction buffer in a
    helper that way): not flagged inside it, in the helpers of its file that only such kernels reach, nor in
    the helper-module code such a kernel reaches (option `caller_skips_shared_hbm_check`, set by
    `evidence.static.helper_modules`).

    Helper modules of the submission are judged like helpers of the kernel file: a function
    reached there is a helper unless it is itself a decorated kernel (a library kernel behind a
    plain wrapper entry allocates its outputs at its own top level).

    Fix: allocate outputs once at the top of the kernel body and write into slices of them from
    the loops.
    """

    id = "shared-hbm-nested"
    severity = Severity.critical
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        _HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    return out\n",
        _HEAD + "@nki.jit(experimental_flags='skip-non-top-level-shared-hbm-check')\ndef k(a):\n"
        "    def helper():\n        return nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n"
        "    return helper()\n",
        _HEAD + "def helper(a):\n    return nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n\n\n"
        "@nki.jit(experimental_flags='skip-non-top-level-shared-hbm-check')\ndef k(a):\n    return helper(a)\n",
        Valid(_HEAD + "@nki.jit\ndef k(a, training=True):\n    if training:\n"
              "        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n    else:\n"
              "        out = None\n    return out\n", inputs={"a": ((128, 64), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(2):\n"
                "        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n", line=6),
        Invalid(_HEAD + "@nki.jit\ndef k(a, training=True):\n    for i in nl.affine_range(2):\n        if training:\n"
                "            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n", line=7),
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    with open('x') as f:\n"
                "        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n", line=6),
        _HEAD + "def helper(a):\n    return nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n",
        # reached from a flagged kernel and from an unflagged one: the unflagged one still fails to compile
        Invalid(_HEAD + "def helper(a):\n    return nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)\n\n\n"
                "@nki.jit(experimental_flags='skip-non-top-level-shared-hbm-check')\ndef k(a):\n    return helper(a)\n"
                "\n\n@nki.jit\ndef k2(a):\n    return helper(a)\n", line=4),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._trace_ifs = [0]  # per function: enclosing `if`s decided while tracing
        self._unflagged: set[str] | None = None  # top-level functions reached without passing a flagged kernel

    def visit_Module(self, node: cst.Module) -> None:
        self._unflagged = unflagged_reach(node, self.ctx.entry)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._trace_ifs.append(0)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._trace_ifs.pop()

    def visit_If(self, node: cst.If) -> None:
        self._trace_ifs[-1] += not isinstance(self.ctx.value(node.test), Tensor)

    def leave_If(self, node: cst.If) -> None:
        self._trace_ifs[-1] -= not isinstance(self.ctx.value(node.test), Tensor)

    def on_call(self, call: CallInfo) -> None:
        if call.name not in ALLOC_CALLS or call.tensor is None or call.tensor.buffer != "shared_hbm":
            return
        line = self.ctx.lines(call.node)[0]
        if self.ctx.options.get(CALLER_SKIPS) or any(
                f.is_kernel and f.start <= line <= f.end and skips_check(f.node) for f in self.ctx.functions):
            return
        fn = call.function
        if call.loops:
            self.report(call.node, f"shared_hbm tensor created inside a loop (line {call.loops[-1].start})",
                        labels={"scope": "loop"})
        elif call.nested > self._trace_ifs[-1]:
            self.report(call.node, "shared_hbm tensor created inside a nested block", labels={"scope": "block"})
        elif fn is not None and not fn.is_kernel and (self._unflagged is None or fn.name in self._unflagged):
            self.report(call.node, f"shared_hbm tensor created in helper '{fn.name}'", labels={"scope": "helper"})


SKIP_FLAG = "skip-non-top-level-shared-hbm-check"
# the option under which a helper module learns that a kernel reaching it passes SKIP_FLAG
CALLER_SKIPS = "caller_skips_shared_hbm_check"


def unflagged_reach(module: cst.Module, entry: str | None) -> set[str] | None:
    """The top-level functions of the file reached from the entry (or, with no entry, from its kernels)
    without passing through a kernel that passes SKIP_FLAG: the compiler's check applies to them. None when
    no kernel passes the flag (every helper is judged)."""
    defs = {s.name.value: s for s in module.body if isinstance(s, cst.FunctionDef)}
    if not any(skips_check(d) for d in defs.values()):
        return None
    reads = {name: {n.value for n in _names(d)} for name, d in defs.items()}
    if entry in defs:
        todo = [entry]
    else:
        todo = [name for name, d in defs.items() if d.decorators and not skips_check(d)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in defs or skips_check(defs[name]):
            continue
        seen.add(name)
        todo.extend(reads[name] & defs.keys())
    return seen


def _names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _Collect(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(_Collect())
    return found


def skips_check(node: cst.FunctionDef) -> bool:
    """Does a decorator of `node` pass the compiler flag that skips the nested shared_hbm check?"""
    for d in node.decorators:
        if not isinstance(d.decorator, cst.Call):
            continue
        for arg in d.decorator.args:
            value = arg.value
            if (arg.keyword is not None and arg.keyword.value == "experimental_flags"
                    and isinstance(value, cst.SimpleString) and SKIP_FLAG in str(value.evaluated_value)):
                return True
    return False
