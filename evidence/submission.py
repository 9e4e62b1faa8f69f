"""The submission as evidence sees it: a validated manifest plus the text of its files.

Loading and validating a folder or an API upload is `grader.submission`'s job; this module only
holds the result, so `evidence` stays usable without `grader`. A submission is self-contained
(files are kept as text), so collectors never need the original folder.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from evidence.model import content_hash
from evidence.paths import RelPath

Target = Literal["trn1", "trn2", "trn3"]  # trn3: simulated with v4 limits; the cost model needs a profile

# dtypes a manifest may declare for kernel inputs (names as NKI and ml_dtypes spell them).
INPUT_DTYPES = (
    "float32", "bfloat16", "float16", "tfloat32", "float8_e4m3", "float8_e5m2", "float8_e4m3fn",
    "int8", "uint8", "int16", "uint16", "int32", "uint32", "bool",
)
DISTRIBUTIONS = ("normal", "uniform", "zeros", "ones", "arange", "randint", "positive", "mask",
                 "large", "cancellation", "mixed")
# A plain Python argument: a number, a flag, or a tuple of them (a shape such as (64, 64)); TOML/JSON
# arrays arrive as tuples.
Scalar = int | float | bool
PlainValue = Scalar | tuple[Scalar, ...]


class TaskSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    title: str
    description: str = ""
    target: Target = "trn2"
    # Tolerance the task states for comparing outputs; None means "derive from the output dtype".
    rtol: float | None = Field(default=None, ge=0)
    atol: float | None = Field(default=None, ge=0)
    # Neuron SDK release the task targets ("2.29"); decides which NKI dialect is current (REFERENCE §0).
    neuron_sdk: str | None = Field(default=None, pattern=r"^2\.\d+(\.\d+)?$")


class KernelSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    file: RelPath
    entry: str
    grid: tuple[int, ...] = ()
    # Helper modules of a multi-file kernel (imported by `file` as siblings or relatively).
    modules: tuple[RelPath, ...] = ()

    @field_validator("grid")
    @classmethod
    def _positive_grid(cls, grid: tuple[int, ...]) -> tuple[int, ...]:
        if any(g <= 0 for g in grid):
            raise PydanticCustomError("grid", "grid sizes must be positive")
        return grid


class InputSpec(BaseModel):
    """One kernel argument. A tensor has shape+dtype; a plain Python value has `value`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    shape: tuple[int, ...] = ()
    dtype: str = "float32"
    distribution: str = "normal"
    low: float | None = None
    high: float | None = None
    mean: float | None = None
    std: float | None = None
    value: PlainValue | None = None  # set for non-tensor arguments (tile counts, flags, shapes)

    @field_validator("value", mode="before")
    @classmethod
    def _plain(cls, value: object) -> object:
        def scalar(v: object) -> bool:
            return isinstance(v, (int, float, bool))

        if value is None or scalar(value) or (isinstance(value, (list, tuple)) and all(scalar(v) for v in value)):
            return value
        raise ValueError(f"must be a number, a boolean or a list of them, got {value!r}"[:200])

    # Validated here, so callers of evidence.gather get the same checks as the CLI and the API.
    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, dtype: str) -> str:
        if dtype not in INPUT_DTYPES:
            raise PydanticCustomError("input_dtype", "unknown dtype {dtype}; expected one of {known}",
                                      {"dtype": repr(dtype), "known": ", ".join(INPUT_DTYPES)})
        return dtype

    @field_validator("distribution")
    @classmethod
    def _known_distribution(cls, distribution: str) -> str:
        if distribution not in DISTRIBUTIONS:
            raise PydanticCustomError("input_distribution", "unknown distribution {name}; expected one of {known}",
                                      {"name": repr(distribution), "known": ", ".join(DISTRIBUTIONS)})
        return distribution

    @field_validator("shape")
    @classmethod
    def _positive_extents(cls, shape: tuple[int, ...]) -> tuple[int, ...]:
        if any(d <= 0 for d in shape):
            raise PydanticCustomError("input_shape", "shape must be a list of positive integers, got {shape}",
                                      {"shape": list(shape)})
        return shape

    @model_validator(mode="after")
    def _tensor_has_shape(self) -> InputSpec:
        if self.is_tensor and not self.shape:
            raise PydanticCustomError("input_shape", "input {name} is a tensor (no value) and needs a non-empty shape",
                                      {"name": repr(self.name)})
        return self

    @property
    def is_tensor(self) -> bool:
        return self.value is None


class FileRef(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    file: RelPath


class ReferenceSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    file: RelPath
    entry: str


class MigrationSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    cuda_file: RelPath
    cuda_entry: str | None = None
    # headers of the submission the CUDA file includes (`#include "common.cuh"`): their macros are read
    cuda_headers: tuple[RelPath, ...] = ()


class NumericsSpec(BaseModel):
    """Trials of the error model (evidence.numerics.errormodel): seeds, extra input distributions and
    a second problem size that shows how the error grows with the reduction length."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seeds: int = Field(default=3, ge=1, le=16)
    distributions: tuple[str, ...] = ()  # applied to every float input, one trial each, besides the inputs' own
    shapes: dict[str, tuple[int, ...]] = Field(default_factory=dict)  # input name -> another shape (e.g. another K)

    @field_validator("distributions")
    @classmethod
    def _known(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [d for d in value if d not in DISTRIBUTIONS]
        if unknown:
            raise ValueError(f"unknown distribution(s) {unknown}; expected some of {', '.join(DISTRIBUTIONS)}")
        return value


class Manifest(BaseModel):
    """The parsed `submission.toml` (DESIGN §4)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: TaskSpec
    kernel: KernelSpec
    inputs: tuple[InputSpec, ...] = ()
    reference: ReferenceSpec | None = None
    migration: MigrationSpec | None = None
    claims: FileRef | None = None
    notes: FileRef | None = None
    # optional: the NKI kernel the claims' speedups are measured against, same inputs (its estimate
    # checks a claimed speedup)
    baseline: ReferenceSpec | None = None
    numerics: NumericsSpec | None = None  # optional: the error model's trials (defaults otherwise)

    @field_validator("inputs")
    @classmethod
    def _unique_names(cls, inputs: tuple[InputSpec, ...]) -> tuple[InputSpec, ...]:
        names = [s.name for s in inputs]
        if len(set(names)) != len(names):
            raise PydanticCustomError("input_names", "input names must be unique")
        return inputs


class Submission(BaseModel):
    """A manifest plus the text of every file it names, keyed by relative path."""

    model_config = ConfigDict(frozen=True)

    manifest: Manifest
    files: dict[RelPath, str]

    @property
    def content_hash(self) -> str:
        return content_hash({"manifest": self.manifest.model_dump(mode="json"), "files": self.files})

    @property
    def kernel_source(self) -> str:
        return self.files[self.manifest.kernel.file]

    @property
    def reference_source(self) -> str | None:
        ref = self.manifest.reference
        return self.files[ref.file] if ref else None

    @property
    def cuda_source(self) -> str | None:
        mig = self.manifest.migration
        return self.files[mig.cuda_file] if mig else None

    @property
    def claims_source(self) -> str | None:
        c = self.manifest.claims
        return self.files[c.file] if c else None

    @property
    def notes_source(self) -> str | None:
        n = self.manifest.notes
        return self.files[n.file] if n else None
