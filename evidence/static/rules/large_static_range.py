"""large-static-range: nl.static_range with a large trip count."""

from __future__ import annotations

from evidence.model import Severity
from evidence.static.framework import Invalid, Rule
from evidence.static.model import LoopInfo

THRESHOLD = 16


class LargeStaticRange(Rule):
    """Flags `nl.static_range` loops with more than 16 iterations (a count the analyzer can fold).

    static_range is fully unrolled at trace time: instruction count, compile time and SBUF
    pressure grow with the trip count, and the loop gets none of affine_range's loop-level
    optimisations; the compiler may fail with "too many instructions" (REFERENCE §3.3).

    Beta-only: in the standalone dialect (0.3+) `static_range` is a deprecated alias of Python
    `range` with no unrolling of its own (`deprecated-nki-api` notes the alias there).

    Fix: use `nl.affine_range` (independent iterations) or `nl.sequential_range` (carried
    state); keep static_range for a few iterations that must be specialised.
    """

    id = "large-static-range"
    severity = Severity.low
    VALID = ["import neuronxcc.nki.language as nl\nfor i in nl.static_range(4):\n    x = i\n",
             "import neuronxcc.nki.language as nl\nfor i in nl.affine_range(1024):\n    x = i\n"]
    INVALID = [Invalid("import neuronxcc.nki.language as nl\nfor i in nl.static_range(64):\n    x = i\n", line=2)]

    def enter_loop(self, loop: LoopInfo) -> None:
        if loop.kind == "static_range" and loop.trip is not None and loop.trip > THRESHOLD:
            self.report((loop.start, loop.start), f"static_range unrolls {loop.trip} iterations at trace time",
                        metrics={"trip_count": loop.trip, "threshold": THRESHOLD})
