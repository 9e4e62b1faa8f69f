"""The cost model's part of a simulation child: estimate + what-ifs from the trace, as JSON.

The trace stays in the child (it can be ~100k events); only this summary goes back to the parent.
A request is a plain dict in the job (`job["perf"]`), a result a plain dict in the child's result
(`result["perf"]`); both validated here, so the child protocol needs no knowledge of them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from evidence.perf.estimate import CostEstimate, estimate
from evidence.perf.spec import load_spec
from evidence.perf.whatif import WhatIf, whatifs


class PerfRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str | None = None  # default: the simulated target
    spec_override: dict | None = None  # parsed TOML of an override file
    # static findings: (rule id, first line, last line[, file]); without a file, those lines of any file
    hints: tuple[tuple[str, int, int] | tuple[str, int, int, str], ...] = ()
    whatif_limit: int = 3
    whatif_estimates: int = 6


class Roofs(BaseModel):
    model_config = ConfigDict(frozen=True)

    peak_tflops: float  # bf16 TensorE peak
    hbm_gbps: float
    memory_gbps: float  # min(HBM, aggregate DMA): the roof a kernel's bytes actually meet
    hbm_chip_gbps: float
    dma_peak_gbps: float  # 16 engines at their theoretical peak: the most any claim could reach on one core
    peak_fp8_tflops: float


class PerfResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    estimate: CostEstimate
    whatifs: tuple[WhatIf, ...]
    roofs: Roofs


def analyse(simulation, request: dict) -> dict:
    """JSON for the parent: the estimate, its what-ifs and the roofs of the hardware table used."""
    req = PerfRequest.model_validate(request)
    spec = load_spec(req.target or simulation.report.target, req.spec_override)
    base = estimate(simulation, spec=spec)
    wis = whatifs(simulation, spec, base, list(req.hints), req.whatif_limit, req.whatif_estimates)
    roofs = Roofs(peak_tflops=spec.peak_tflops(), hbm_gbps=spec["hbm_gbps"], memory_gbps=spec.memory_gbps,
                  hbm_chip_gbps=spec["hbm_chip_gbps"],
                  dma_peak_gbps=spec["dma_engines"] * spec["dma_engine_peak_gbps"],
                  peak_fp8_tflops=spec["peak_fp8_tflops"])
    return PerfResult(estimate=base, whatifs=tuple(wis), roofs=roofs).model_dump(mode="json")
