"""undocumented-nki-api: beta-dialect imports of names no documented NKI release has."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.static.dialect import dotted
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule

_BETA = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
# What `neuronxcc.nki` itself holds in the documented releases (Neuron SDK 2.20-2.28 API reference: the
# decorators, `simulate_kernel`, the `tensor` type, `trace`) and its documented submodules, `kernels` (the
# kernels neuronx-cc ships) included. The beta namespace is frozen: neuronxcc.nki shipped last in 2.28.
TOP_LEVEL = frozenset({"jit", "benchmark", "profile", "baremetal", "simulate_kernel", "tensor", "trace",
                       "language", "isa", "typing", "compiler", "kernels"})
ROOT = "neuronxcc.nki"


def undocumented(dotted: str) -> str | None:
    """The first part of a `neuronxcc.nki.<...>` path that no documented release has, or None. Private
    names (`_private`, shipped but undocumented) and anything below a documented submodule are left alone."""
    if not dotted.startswith(ROOT + "."):
        return None
    head = dotted[len(ROOT) + 1:].split(".")[0]
    return None if head in TOP_LEVEL or head.startswith("_") else f"{ROOT}.{head}"


class UndocumentedNkiApi(Rule):
    """Flags imports from `neuronxcc.nki` of names no documented NKI release has
    (`from neuronxcc.nki import program_id`, `import neuronxcc.nki.ops`): pre-release APIs of early
    kernels, or names that never existed.

    No Neuron SDK compiles such a kernel: the import fails before any instruction is traced, so nothing
    the simulator measures (tiles, transfers, dtypes on the device) stands behind the other criteria.
    Only the beta namespace is judged: it is frozen (neuronxcc.nki shipped last in Neuron SDK 2.28),
    while the standalone `nki` package still grows, so a name it lacks today may be a newer release's.
    Labels: `api` (the missing names, comma-separated).

    Fix: use the documented API (`nl.program_id`, `nl.*` / `nisa.*` ops; docs `nki/api`).
    """

    id = "undocumented-nki-api"
    severity = Severity.high
    dialects = (BETA, STANDALONE)
    performance = False
    VALID = [
        _BETA + "from neuronxcc.nki import baremetal, benchmark\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n",
        _BETA + "import neuronxcc.nki.isa as nisa\nfrom neuronxcc.nki.typing import tensor\n"
        "from neuronxcc.nki.isa.constants import oob_mode\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n",
        _BETA + "from neuronxcc.nki._private.private_api import core_barrier\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n",
        _BETA + "from neuronxcc.nki.kernels.attention import flash_fwd\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n",
    ]
    INVALID = [
        Invalid(_BETA + "from neuronxcc.nki import program_id\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n", line=3),
        Invalid(_BETA + "import neuronxcc.nki.ops as ops\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n", line=3),
        Invalid(_BETA + "from neuronxcc.nki.ops import tile_add\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n", line=3),
        # `affine_range` lives in nki.language: imported from the top level it is a pre-release spelling too
        Invalid(_BETA + "from neuronxcc.nki import jit, program_id, affine_range\n@nki.jit\ndef k(a):\n"
                "    x = nl.load(a)\n", line=3),
    ]

    def _check(self, node: cst.CSTNode, paths: list[str]) -> None:
        """One finding per import statement, naming every missing name it imports."""
        missing = list(dict.fromkeys(m for m in map(undocumented, paths) if m is not None))
        if missing:
            names = ", ".join(missing)
            self.report(node, f"{names} {'is' if len(missing) == 1 else 'are'} in no documented NKI release: no Neuron "
                        "SDK compiles this import", labels={"api": names})

    def visit_Import(self, node: cst.Import) -> None:
        self._check(node, [dotted(alias.name) for alias in node.names])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is None or node.relative:
            return
        module = dotted(node.module)
        if module == ROOT and not isinstance(node.names, cst.ImportStar):
            self._check(node, [f"{module}.{dotted(alias.name)}" for alias in node.names])
        else:
            self._check(node, [module])
