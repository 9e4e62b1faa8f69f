"""undocumented-nki-api: beta-dialect imports and `nl.*` / `nisa.*` calls of names no documented NKI release has."""

from __future__ import annotations

import libcst as cst

from evidence.model import Severity
from evidence.documented_nki_api import documented
from evidence.static.dialect import dotted
from evidence.static.framework import BETA, STANDALONE, Invalid, Rule
from evidence.static.model import CallInfo
from evidence.static.rulekit import standalone

_BETA = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
# What `neuronxcc.nki` itself holds in the documented releases (Neuron SDK 2.20-2.28 API reference: the
# decorators, `simulate_kernel`, the `tensor` type, `trace`) and its documented submodules, `kernels` (the
# kernels neuronx-cc ships) included. The beta namespace is frozen: neuronxcc.nki shipped last in 2.28.
TOP_LEVEL = frozenset({"jit", "benchmark", "profile", "baremetal", "simulate_kernel", "tensor", "trace",
                       "language", "isa", "typing", "compiler", "kernels"})
ROOT = "neuronxcc.nki"


def undocumented(dotted: str) -> str | None:
    """The first part of a `neuronxcc.nki.<...>` path that no documented release has, or None: a top-level
    name, or a name of `language` / `isa` that no release of either dialect documents (evidence.documented_nki_api).
    Private names (`_private`, shipped but undocumented) and anything below a documented name are left alone."""
    if not dotted.startswith(ROOT + "."):
        return None
    parts = dotted[len(ROOT) + 1:].split(".")
    head = parts[0]
    if head not in TOP_LEVEL and not head.startswith("_"):
        return f"{ROOT}.{head}"
    if head in _SPACES and len(parts) > 1 and not documented(f"{_SPACES[head]}.{parts[1]}"):
        return f"{ROOT}.{head}.{parts[1]}"
    return None


_SPACES = {"language": "nl", "isa": "nisa"}  # the submodules whose names are judged one by one


class UndocumentedNkiApi(Rule):
    """Flags imports from `neuronxcc.nki` of names no documented NKI release has
    (`from neuronxcc.nki import program_id`, `import neuronxcc.nki.ops`,
    `from neuronxcc.nki.language import fast_exp`) and, in beta-dialect code, calls of `nl.*` / `nisa.*` names
    no release of either dialect documents (`nl.fast_exp(t)`): pre-release APIs of early kernels, or names that
    never existed. A documented op the simulator lacks is not flagged (that is our gap, `sim.incomplete`).

    No Neuron SDK compiles such a kernel: the import fails before any instruction is traced, so nothing
    the simulator measures (tiles, transfers, dtypes on the device) stands behind the other criteria.
    No Neuron SDK traces a call of such a name either (AttributeError). Only the beta namespace is judged: it is
    frozen (neuronxcc.nki shipped last in Neuron SDK 2.28), while the standalone `nki` package still grows, so a
    name it lacks today may be a newer release's. The names are checked against every documented release of both
    dialects (evidence.documented_nki_api). Labels: `api` (the missing names, comma-separated), `form` (`import` |
    `call`: a call in a branch the task's run never takes is lowered by evidence.corroborate, `trace` = `not_traced`).

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
    VALID += [
        # documented ops, including ones the simulator does not implement (nisa.nc_matmul_mx, nisa.quantize_mx)
        _BETA + "import neuronxcc.nki.isa as nisa\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n    y = nl.exp(x)\n"
        "    z = nisa.nc_matmul_mx(x, y)\n    w = nisa.quantize_mx(z)\n",
        _BETA + "from neuronxcc.nki.language import par_dim, exp\nfrom neuronxcc.nki.language.constants import "
        "sizeinbytes\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n    y = exp(x)\n",
        # the standalone package still grows: a name it lacks today may be a newer release's
        "import nki\nimport nki.language as nl\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n    y = nl.fast_exp(x)\n",
    ]
    INVALID = [
        Invalid(_BETA + "@nki.jit\ndef k(a):\n    x = nl.load(a)\n    y = nl.fast_exp(x)\n    z = nl.fast_exp(y)\n",
                line=6),
        Invalid(_BETA + "import neuronxcc.nki.isa as nisa\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n"
                "    y = nisa.tensor_exp(x)\n", line=7),
        Invalid(_BETA + "from neuronxcc.nki.language import fast_exp\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n"
                "    y = fast_exp(x)\n", line=3),
        Invalid(_BETA + "from neuronxcc.nki import program_id\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n", line=3),
        Invalid(_BETA + "import neuronxcc.nki.ops as ops\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n", line=3),
        Invalid(_BETA + "from neuronxcc.nki.ops import tile_add\n@nki.jit\ndef k(a):\n    x = nl.load(a)\n", line=3),
        # `affine_range` lives in nki.language: imported from the top level it is a pre-release spelling too
        Invalid(_BETA + "from neuronxcc.nki import jit, program_id, affine_range\n@nki.jit\ndef k(a):\n"
                "    x = nl.load(a)\n", line=3),
    ]

    def __init__(self, engine) -> None:
        super().__init__(engine)
        self._told: set[str] = set()  # `nl.x` / `nisa.x` names already reported in this file (import or call)

    def _check(self, node: cst.CSTNode, paths: list[str]) -> None:
        """One finding per import statement, naming every missing name it imports."""
        missing = list(dict.fromkeys(m for m in map(undocumented, paths) if m is not None))
        for m in missing:
            head, _, attr = m[len(ROOT) + 1:].partition(".")
            if head in _SPACES and attr:
                self._told.add(f"{_SPACES[head]}.{attr}")
        if missing:
            names = ", ".join(missing)
            self.report(node, f"{names} {'is' if len(missing) == 1 else 'are'} in no documented NKI release: no Neuron "
                        "SDK compiles this import", labels={"api": names, "form": "import"})

    def visit_Import(self, node: cst.Import) -> None:
        self._check(node, [dotted(alias.name) for alias in node.names])

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.module is None or node.relative:
            return
        module = dotted(node.module)
        if module in (ROOT, *(f"{ROOT}.{m}" for m in _SPACES)) and not isinstance(node.names, cst.ImportStar):
            self._check(node, [f"{module}.{dotted(alias.name)}" for alias in node.names])
        else:
            self._check(node, [module])

    def on_call(self, call: CallInfo) -> None:
        """The first call of each undocumented `nl.*` / `nisa.*` name in a beta-dialect file."""
        space, _, attr = call.name.partition(".")
        if standalone(self.ctx) or space not in ("nl", "nisa") or not attr or "." in attr:
            return
        if call.name in self._told or documented(call.name):
            return
        self._told.add(call.name)
        self.report(call.node, f"{call.name} is in no documented NKI release: no Neuron SDK traces this call "
                    "(AttributeError)", labels={"api": call.name, "form": "call"})
