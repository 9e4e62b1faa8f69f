"""sequential-without-dependency: sequential_range on a loop whose iterations are independent."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import Invalid, Rule, Valid
from evidence.static.model import LoopInfo

_HEAD = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n"
_CARRY_CALLS = frozenset({"nisa.tensor_tensor_scan", "nl.loop_reduce", "nl.atomic_rmw", "nl.all_reduce"})
_WORK = ("nl.load", "nl.store", "nisa.", "nl.matmul", "nl.exp", "nl.add", "nl.multiply", "nl.copy")


class SequentialWithoutDependency(Rule):
    """Flags `nl.sequential_range` (and plain `range`, which beta lowers to it) loops doing NKI
    work whose iterations carry no state: no `+=`, no running value, no buffer rewritten at a
    fixed location, no scan, no reduction chained through accumulator registers (`reduce_cmd`).

    sequential_range tells the compiler to keep iterations in order, which forbids overlapping
    one iteration's DMA with another's compute; independent iterations lose the pipelining that
    affine_range allows (REFERENCE §3.3, §5.3 rule 4).

    Beta-only: in the standalone dialect (0.3+) every iterator is an alias of Python `range`;
    choosing among them changes nothing the compiler sees (`deprecated-nki-api` notes the alias).

    Fix: use `nl.affine_range` for independent iterations.
    """

    id = "sequential-without-dependency"
    severity = Severity.low
    VALID = [
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    state = nl.zeros((128, 1), nl.float32)\n    for i in nl.sequential_range(4):\n"
              "        x = nl.load(a[i * 128:(i + 1) * 128, 0:1])\n        state = nl.add(state, x)\n",
              inputs={"a": ((512, 8), "float32")}),
        Valid(_HEAD + "@nki.jit\ndef k(a):\n    for i in nl.affine_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n",
              inputs={"a": ((512, 8), "float32")}),
        Valid(_HEAD + "@nki.jit\ndef k(a, lo, hi):\n    for i in nl.sequential_range(4):\n"
              "        x = nl.load(a[:, i * 128:(i + 1) * 128])\n"
              "        nisa.range_select(on_true_tile=x, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=lo,\n"
              "                          bound1=hi, reduce_cmd=nisa.reduce_cmd.reduce, range_start=i * 128)\n",
              inputs={"a": ((128, 512), "float32")}),
    ]
    INVALID = [
        Invalid(_HEAD + "@nki.jit\ndef k(a):\n    out = nl.ndarray((512, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n"
                "    for i in nl.sequential_range(4):\n        x = nl.load(a[i * 128:(i + 1) * 128, :])\n"
                "        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(x))\n    return out\n",
                inputs={"a": ((512, 8), "float32")}, line=7),
    ]

    def leave_loop(self, loop: LoopInfo) -> None:
        if loop.kind not in ("sequential_range", "range") or (loop.trip is not None and loop.trip < 2):
            return
        if not any(c.name.startswith(_WORK) for c in loop.calls):
            return
        # reduce_cmd chains a reduction through the engine's accumulator registers across instructions
        if any(c.name in _CARRY_CALLS or c.has_kw("dst_rmw_op") or c.has_kw("reduce_cmd") for c in loop.calls):
            return
        for a in loop.assigns:
            outer = a.target_def_loops is not None and loop.id not in a.target_def_loops
            if not outer:
                continue
            if a.kind == "aug" or (a.kind == "bind" and a.target in a.names):
                return
            if a.kind == "store" and (loop.id not in a.index_deps or any(a.target in x.names for x in loop.calls)):
                return
        self.report((loop.start, loop.start), f"{loop.kind} loop has no loop-carried dependency; "
                    "its iterations could be pipelined with affine_range",
                    metrics={"trip_count": loop.trip}, labels={"iterator": loop.kind})
