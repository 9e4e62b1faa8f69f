"""The benchmark-claims file (`claims.toml`) and the methodology checks that need no measurement.

Schema (documented in docs/submission-format.md):

    [method]                      # how the figures were obtained; a claim may override any key
    source = "measured"           # measured | simulated | estimated
    timer = "device"              # device | host
    synchronized = true           # host timers only: device synchronised before reading the clock
    warmup = 10
    iterations = 100
    variance_reported = true
    correctness_checked = true    # outputs checked on the timed configuration
    compile_excluded = true
    device = "trn2.48xlarge"

    [[claim]]
    id = "latency"
    metric = "latency_us"         # latency_us | speedup | tflops | gbps
    value = 412.0
    baseline = "reference softmax in torch-neuronx"
    baseline_value = 980.0
    dtype = "bfloat16"
    baseline_dtype = "bfloat16"
    shapes = "x[300,1024]"
    baseline_shapes = "x[300,1024]"

Coarse physical bounds are checked here (a claimed rate above the chip's peak, a latency below one
DMA's fixed cost); bounds from the kernel's own FLOPs and bytes need the cost model and come with it.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from evidence.nki.dtypes import canonical_name, significand_bits
from evidence.validation import one_line

Metric = Literal["latency_us", "speedup", "tflops", "gbps"]


class Method(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    source: Literal["measured", "simulated", "estimated"] | None = None
    timer: Literal["device", "host"] | None = None
    synchronized: bool | None = None
    warmup: int | None = None
    iterations: int | None = None
    variance_reported: bool | None = None
    correctness_checked: bool | None = None
    compile_excluded: bool | None = None
    device: str | None = None


class Claim(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    metric: Metric
    value: float
    baseline: str | None = None
    baseline_value: float | None = None
    dtype: str | None = None
    baseline_dtype: str | None = None
    shapes: str | None = None
    baseline_shapes: str | None = None
    method: Method = Method()


class ClaimsFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Method = Method()
    claim: tuple[Claim, ...] = ()

    def effective_method(self, claim: Claim) -> Method:
        overrides = claim.method.model_dump(exclude_none=True)
        return self.method.model_copy(update=overrides)


class ClaimsFormatError(ValueError):
    pass


def parse_claims(text: str, file: str) -> ClaimsFile:
    try:
        data = tomllib.loads(text)
        return ClaimsFile.model_validate(data)
    except tomllib.TOMLDecodeError as exc:
        raise ClaimsFormatError(f"{file}: invalid TOML: {exc}") from exc
    except ValidationError as exc:
        raise ClaimsFormatError(one_line(exc, file)) from exc


@dataclass(frozen=True)
class MethodGap:
    code: str
    severity: str  # evidence Severity value
    message: str


MIN_ITERATIONS = 10

# Coarse physical bounds (REFERENCE §1, §5.1-§5.2). Per chip, and per NeuronCore when the claim's
# device names a single core. Dense fp8 is the highest TensorE rate on each generation.
PEAK_TFLOPS = {"trn1": {"chip": 190.0, "core": 92.0}, "trn2": {"chip": 1299.0, "core": 158.0}}
HBM_GBPS = {"trn1": {"chip": 820.0, "core": 410.0}, "trn2": {"chip": 2900.0, "core": 375.0}}
DMA_FIXED_COST_US = 1.3  # setup + descriptors + semaphores of one transfer (2026 DMA guide)
_NOT_A_DEVICE = ("simulat", "cpu", "emulat", "estimate", "model")


def _scope(method: Method) -> str:
    device = (method.device or "").lower()
    return "core" if "core" in device and "cores" not in device else "chip"


def physical_gaps(claim: Claim, method: Method, target: str) -> list[MethodGap]:
    """Claims no Trainium device can produce, whatever the kernel does."""
    gaps: list[MethodGap] = []
    scope = _scope(method)
    gen = target if target in PEAK_TFLOPS else "trn2"
    if claim.metric == "tflops" and claim.value > PEAK_TFLOPS[gen][scope]:
        gaps.append(MethodGap("exceeds_peak_flops", "high",
                              f"{claim.value:g} TFLOPS exceeds the {gen} {scope} peak of {PEAK_TFLOPS[gen][scope]:g} TFLOPS (dense fp8)"))
    if claim.metric == "gbps" and claim.value > HBM_GBPS[gen][scope]:
        gaps.append(MethodGap("exceeds_hbm_bandwidth", "high",
                              f"{claim.value:g} GB/s exceeds the {gen} {scope} HBM bandwidth of {HBM_GBPS[gen][scope]:g} GB/s"))
    if claim.metric == "latency_us" and claim.value < DMA_FIXED_COST_US:
        gaps.append(MethodGap("below_dma_fixed_cost", "high",
                              f"{claim.value:g} us is below the ~{DMA_FIXED_COST_US} us fixed cost of a single DMA transfer"))
    device = (method.device or "").lower()
    if method.source == "measured" and any(w in device for w in _NOT_A_DEVICE):
        gaps.append(MethodGap("measured_off_device", "high",
                              f"labelled measured, but the device is {method.device!r}: not a Trainium measurement"))
    return gaps


def methodology_gaps(claim: Claim, method: Method) -> list[MethodGap]:
    """What a reviewer would object to in how this claim was obtained (kernel-evaluation practice)."""
    gaps: list[MethodGap] = []
    timing = claim.metric in ("latency_us", "speedup", "tflops", "gbps")
    if method.source in ("simulated", "estimated") and timing:
        gaps.append(MethodGap("not_measured", "high",
                              f"{method.source} figure used as a performance claim; the simulator and cost models do not measure time"))
    if method.source is None:
        gaps.append(MethodGap("source_unstated", "medium", "the claim does not say whether it was measured, simulated or estimated"))
    if claim.metric == "speedup" and not claim.baseline:
        gaps.append(MethodGap("no_baseline", "high", "a speedup without a named baseline"))
    if method.timer == "host" and not method.synchronized:
        gaps.append(MethodGap("host_timer_unsynchronized", "critical",
                              "host-side timing without device synchronisation: the clock stops before the device finishes"))
    if not method.warmup:
        gaps.append(MethodGap("no_warmup", "medium", "no warm-up iterations before timing"))
    if (method.iterations or 0) < MIN_ITERATIONS:
        gaps.append(MethodGap("few_iterations", "medium", f"fewer than {MIN_ITERATIONS} timed iterations (got {method.iterations or 0})"))
    if not method.correctness_checked:
        gaps.append(MethodGap("correctness_unchecked", "medium", "correctness not checked on the timed configuration"))
    if not method.variance_reported:
        gaps.append(MethodGap("no_variance", "low", "no variance or spread reported"))
    if method.compile_excluded is False or method.compile_excluded is None:
        gaps.append(MethodGap("compile_not_excluded", "low", "compile time not stated as excluded from the timing"))
    return gaps


# The [method] keys each methodology gap depends on: a gap whose keys the claim does not override
# comes from the file's [method] and concerns every claim, so it is reported once for the file.
METHOD_KEYS: dict[str, tuple[str, ...]] = {
    "not_measured": ("source",), "source_unstated": ("source",), "host_timer_unsynchronized": ("timer", "synchronized"),
    "no_warmup": ("warmup",), "few_iterations": ("iterations",), "correctness_unchecked": ("correctness_checked",),
    "no_variance": ("variance_reported",), "compile_not_excluded": ("compile_excluded",),
    "measured_off_device": ("source", "device"),
}


def file_level(gap: MethodGap, claim: Claim) -> bool:
    """True when the gap comes from the claims file's [method], not from the claim's own overrides."""
    keys = METHOD_KEYS.get(gap.code)
    if keys is None:
        return False
    overridden = claim.method.model_dump(exclude_none=True)
    return not any(k in overridden for k in keys)


def _bits(name: str) -> int:
    """Significand bits of a dtype name; a name that is not a float dtype counts as float32 (no precision given up)."""
    return significand_bits(name) or 24


def _shapes(text: str | None) -> str:
    return "".join((text or "").split()).lower()


def parity_gaps(claim: Claim, kernel_dtype: str | None, task_rtol: float | None,
                noted_baseline_dtype: str | None = None) -> list[MethodGap]:
    """Baseline and candidate in different precisions or shapes (issue 16.4): the claim's dtypes, else the
    kernel's inputs' dtype for the candidate and the notes' for the baseline."""
    gaps: list[MethodGap] = []
    cand = canonical_name(claim.dtype) or canonical_name(kernel_dtype)
    base = canonical_name(claim.baseline_dtype) or canonical_name(noted_baseline_dtype)
    if cand and base and cand != base:
        lower = _bits(cand) < _bits(base)
        if lower and task_rtol is None:
            gaps.append(MethodGap("precision_parity", "high",
                                  f"a {cand} candidate against a {base} baseline with no stated tolerance: the speed-up "
                                  "includes the precision given up, and nothing says the accuracy is still acceptable"))
        else:
            gaps.append(MethodGap("config_mismatch", "high", f"baseline runs in {base} but the candidate in {cand}"))
    if claim.shapes and claim.baseline_shapes and _shapes(claim.shapes) != _shapes(claim.baseline_shapes):
        gaps.append(MethodGap("shape_parity", "high",
                              f"the candidate was timed on {claim.shapes} but the baseline on {claim.baseline_shapes}"))
    elif claim.shapes and claim.baseline:
        named, base = _named_shapes(claim.shapes), _named_shapes(claim.baseline)
        differ = sorted(k for k in named.keys() & base.keys() if named[k] != base[k])
        if differ:
            k = differ[0]
            gaps.append(MethodGap("shape_parity", "high", f"the candidate was timed on {k}{list(named[k])} but the "
                                  f"baseline, as described, on {k}{list(base[k])}"))
    return gaps


_NAMED_SHAPE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\[\s*([0-9][0-9,\s]*)\]")


def _named_shapes(text: str) -> dict[str, tuple[int, ...]]:
    """`x[4096, 1024]` mentions in a text: name -> shape."""
    return {n: tuple(int(d) for d in dims.replace(" ", "").split(",") if d) for n, dims in _NAMED_SHAPE.findall(text)}
