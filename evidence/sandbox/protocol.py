"""The child protocol: what the parent asks a child to run, and what the child reports back.

The parent writes `job.json` (`ChildJob`) and the submission's files under `src/`; the child writes
under `out/` only: `result.json` (`ChildResult`: status, the simulator's report and any error in one
schema), one `.npy` file per output array (`OutputMeta`), `events.jsonl` (`RuntimeEvent` lines,
written as they happen so they survive a child that dies) and `fault.log` (faulthandler's
tracebacks at a timeout or a fatal signal). The parent size-checks every file before parsing it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evidence.nki.report import Report
from evidence.paths import RelPath
from evidence.sandbox.config import Limits
from evidence.submission import InputSpec, Target

Role = Literal["kernel", "reference"]
ARRAY_NAME = r"^(out|ref|wr|f64ref|devref|absref|pertref)[0-9]{1,3}$"


class ChildJob(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    file: RelPath  # the module to load (the kernel or the reference file)
    entry: str
    inputs: tuple[InputSpec, ...]
    seed: int = 0
    grid: tuple[int, ...] = ()
    target: Target = "trn2"
    neuron_sdk: str | None = None  # kernel role: the task's Neuron SDK (dialect mixing is legal before 2.30)
    timeout_s: float = Field(gt=0)
    limits: Limits
    import_policy: bool = True  # block system access at run time (otherwise record it only)
    withheld: tuple[RelPath, ...] = ()  # submission files kept out of this child (the other side's module)
    # kernel role: shape placeholders instead of inputs, no arithmetic (the cost model's run)
    trace_only: bool = False
    perf: dict | None = None  # kernel role: an evidence.perf.analysis request, answered in ChildResult.perf
    affine_order: Literal["program", "reversed"] = "program"  # kernel role: the error model's order trial
    # reference role: the error model's references (`f64`, `dev`, `abs`: evidence.nki.runner) as
    # arrays f64ref<i>, devref<i>, absref<i>; `dev` first rounds each float input to its entry of device_dtypes
    # (one per input, in order; None or missing: the input as it is); `pert` (after `f64`): pertref<i>, the float64
    # reference's relative change per unit of a seeded random-sign relative perturbation of the float inputs, one
    # figure per sign pattern (the error model's cap on the conditioning)
    reference_variants: tuple[Literal["f64", "dev", "abs", "pert"], ...] = ()
    device_dtypes: tuple[str | None, ...] = ()
    # `dev`: boxes of an input the kernel computes in a lower precision than the rest of it, rounded after
    # device_dtypes: (input index, dtype, lo, hi) with lo <= index < hi per axis
    device_regions: tuple[tuple[int, str, tuple[int, ...], tuple[int, ...]], ...] = ()


class ChildError(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    message: str
    file: str | None = None
    line: int = 0


class OutputMeta(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    array: str = Field(pattern=ARRAY_NAME)  # out/<array>.npy
    dtype: str  # the dtype the code produced (the file holds it widened: low precision as float32)
    shape: tuple[int, ...]
    written: str | None = Field(default=None, pattern=ARRAY_NAME)  # mask of written elements, when partial


class ChildResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    status: Literal["ok", "error", "unsupported_dialect"]
    error: ChildError | None = None
    report: Report | None = None  # kernel role: the simulation report (partial when the run stopped)
    outputs: tuple[OutputMeta, ...] = ()
    entry_line: int = 0
    stand_ins: tuple[str, ...] = ()  # framework modules served by inert stand-ins
    perf: dict | None = None  # kernel role: the cost model's summary (evidence.perf.analysis), when asked
    variants: dict[str, str] = Field(default_factory=dict)  # reference role: variant -> "ok" or why it failed


class RuntimeEvent(BaseModel):
    """Something submitted code did that reaches past its computation, seen by the child's monitor."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["system_access", "escape", "reference_access"]
    what: str  # e.g. "os.system", "open /etc/passwd", "socket.connect"
    detail: str = ""
    file: str | None = None
    line: int = 0
    blocked: bool = False
