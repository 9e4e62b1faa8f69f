"""Performance evidence: hardware tables, the cost model over the simulator's trace, what-ifs, claims.

Public contract (DESIGN §4): `estimate(simulation, target=None) -> CostEstimate`.
"""

from evidence.perf.estimate import CostEstimate, estimate
from evidence.perf.spec import HardwareSpec, SpecError, load_spec

__all__ = ["CostEstimate", "HardwareSpec", "SpecError", "estimate", "load_spec"]
