"""The NKI CPU simulator: run NKI kernel source, beta `neuronxcc.nki` or standalone `nki` 0.3+, on numpy.

    module = load_kernel("kernel.py")
    sim = simulate(module.my_kernel, a, b, grid=(2,), target="trn2")
    sim.outputs, sim.report

See DESIGN §5 and REFERENCE §1-§4 for the semantics enforced.
"""

from evidence.nki.errors import (
    EvidenceError, KernelError, KernelLoadError, SimulationError, UnsupportedOpError,
)
from evidence.nki.loader import load_kernel, shim_imports
from evidence.nki.report import Report
from evidence.nki.simulate import Simulation, simulate
from evidence.nki.shim.typing import TensorSpec

__all__ = [
    "EvidenceError", "KernelError", "KernelLoadError", "Report", "SimulationError", "Simulation", "TensorSpec",
    "UnsupportedOpError", "load_kernel", "shim_imports", "simulate",
]
