"""deprecated-nki-api: NKI APIs that the Neuron SDK the kernel targets has deprecated."""

from __future__ import annotations

import re

import libcst as cst

from evidence.model import Severity
from evidence.static.dialect import dotted
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule, Valid
from evidence.static.model import LoopInfo

_SA = "import nki\nimport nki.language as nl\n"
_BETA = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
# The first Neuron SDK whose NKI is the standalone package as GA (nki 0.3); 2.27 was the last to
# ship neuronxcc.nki (REFERENCE §0).
STANDALONE_GA_SDK = (2, 29)
_ALIASES = {"affine_range", "sequential_range", "static_range"}


def sdk_version(text: object) -> tuple[int, ...] | None:
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", str(text or "").strip())
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


class DeprecatedNkiApi(Rule):
    """Flags NKI written against an API the targeted SDK has deprecated: beta-dialect code
    (`neuronxcc.nki` imports) in a task that targets Neuron SDK 2.29 or later (`task.neuron_sdk`),
    and, in the standalone dialect, the `nl.affine_range` / `sequential_range` / `static_range`
    iterators.

    Neuron 2.27 is the last release that ships `neuronxcc.nki` (end of support announced in
    [SDK-HEAD]); from 2.29 the standalone `nki` package is GA and from nki 0.4 a `neuronxcc.nki`
    import inside a kernel is a compile error. In nki 0.3+ the three range iterators are deprecated
    aliases of Python `range` that carry none of their beta meaning (REFERENCE §0, §3.3). Labels:
    `what` = beta_dialect | range_iterator, `api`.

    Fix: port the kernel to `import nki` (dst-first `nisa.*` calls, slices instead of masks;
    docs `nki/migration`), and write `for i in range(n)` in standalone kernels.
    """

    id = "deprecated-nki-api"
    severity = Severity.low
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        _SA + "@nki.jit\ndef k(a):\n    for i in range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n",
        _BETA + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n",
        Valid(_BETA + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n", options={"neuron_sdk": "2.27"}),
    ]
    INVALID = [
        Invalid(_SA + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n",
                line=5),
        Invalid(_BETA + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n", options={"neuron_sdk": "2.29"}, line=1),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        sdk = sdk_version(self.ctx.options.get("neuron_sdk"))
        self._sdk = sdk
        self._beta_late = self.ctx.dialect.dialect == BETA and sdk is not None and sdk >= STANDALONE_GA_SDK

    def _beta_import(self, node: cst.CSTNode, module: str) -> None:
        if self._beta_late and module.startswith("neuronxcc"):
            self._beta_late = False  # once per file, at the first import
            sdk = ".".join(str(x) for x in self._sdk or ())
            self.report(node, f"beta-dialect NKI ({module}) in a task that targets Neuron SDK {sdk}: neuronxcc.nki "
                        "shipped last in 2.27 and the standalone nki package is GA from 2.29",
                        labels={"what": "beta_dialect", "api": module, "neuron_sdk": sdk})

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._beta_import(node, dotted(alias.name))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is not None:
            self._beta_import(node, dotted(node.module))

    def enter_loop(self, loop: LoopInfo) -> None:
        if self.ctx.dialect.dialect == STANDALONE and loop.kind in _ALIASES:
            self.report((loop.start, loop.start), f"nl.{loop.kind} is a deprecated alias of Python range in nki 0.3+",
                        labels={"what": "range_iterator", "api": f"nl.{loop.kind}"})
