"""Hardware tables of the cost model: one TOML file per target under `specs/`, every number with its source.

A table is versioned; an estimate records the version it used. Any parameter can be overridden by a
TOML file of the same shape (`[params] name = 3.0` or `name = { value = 3.0, source = "..." }`),
e.g. to model a new SDK's DMA figures. The cost model is calibrated only through these documented
physical parameters, never through per-kernel constants (README: validation against the matmul
tutorial).
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from evidence.nki.errors import EvidenceError
from evidence.validation import one_line

SPEC_DIR = Path(__file__).parent / "specs"
TARGET_ALIASES = {"inf2": "trn1"}  # REFERENCE §0: inf2 behaves as trn1


class SpecError(EvidenceError):
    """A hardware table or an override file that cannot be used."""


class Param(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    value: float
    source: str


class Params(BaseModel):
    """The physical parameters the scheduler and the roofline use (see the TOML files for sources)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pe_clock_ghz: Param
    pe_rows: Param
    pe_cols: Param
    vector_clock_ghz: Param
    scalar_clock_ghz: Param
    gpsimd_clock_ghz: Param
    dependent_overhead_cycles: Param
    hbm_gbps: Param
    hbm_chip_gbps: Param
    dma_engines: Param
    dma_partitions_per_engine: Param
    dma_engine_gbps: Param
    dma_engine_peak_gbps: Param
    dma_buffer_overhead_bytes: Param
    dma_fixed_latency_ns: Param
    dma_transpose_efficiency: Param
    sbuf_bytes_per_partition: Param
    psum_banks: Param
    peak_bf16_tflops: Param
    peak_fp32_tflops: Param
    peak_fp8_tflops: Param

    @model_validator(mode="after")
    def _physical(self) -> "Params":
        """Clocks, bandwidths and counts divide: zero or negative would price a kernel at infinity or less
        than nothing. Only the overheads may be zero."""
        for name in type(self).model_fields:
            value = getattr(self, name).value
            if not math.isfinite(value) or value < 0 or (value == 0 and name not in _MAY_BE_ZERO):
                bound = ">= 0" if name in _MAY_BE_ZERO else "> 0"
                raise ValueError(f"params.{name} = {value}: must be a finite number {bound}")
        return self


_MAY_BE_ZERO = {"dependent_overhead_cycles", "dma_buffer_overhead_bytes", "dma_fixed_latency_ns"}


class HardwareSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    target: str
    version: str
    params: Params

    def __getitem__(self, name: str) -> float:
        return getattr(self.params, name).value

    def clock_ghz(self, engine: str) -> float:
        return self[f"{'pe' if engine == 'tensor' else engine}_clock_ghz"]

    @property
    def dma_gbps(self) -> float:
        """Aggregate DMA bandwidth of one core (bytes/ns)."""
        return self["dma_engines"] * self["dma_engine_gbps"]

    @property
    def memory_gbps(self) -> float:
        """The memory roof: HBM bandwidth or the DMA engines' aggregate, whichever is lower (REFERENCE §9.7)."""
        return min(self["hbm_gbps"], self.dma_gbps)

    def peak_tflops(self, dtype: str = "bfloat16") -> float:
        if dtype in ("float32",):
            return self["peak_fp32_tflops"]
        if dtype.startswith("float8"):
            return self["peak_fp8_tflops"]
        return self["peak_bf16_tflops"]


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text())
    except OSError as exc:
        raise SpecError("spec_unreadable", f"{path}: cannot read hardware table: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SpecError("spec_invalid", f"{path}: invalid TOML: {exc}") from exc


def _with_sources(params: dict, origin: str) -> dict:
    """`name = 3.0` or `name = {value, source}`: every value gets a source (the file it came from)."""
    out = {}
    for name, val in params.items():
        if isinstance(val, dict):
            out[name] = {"value": val.get("value"), "source": val.get("source") or f"profile {origin}"}
        else:
            out[name] = {"value": val, "source": f"profile {origin}"}
    return out


def _merge(base: dict, override: dict, origin: str) -> dict:
    params = dict(base["params"])
    for name, val in _with_sources(override.get("params") or {}, origin).items():
        if name not in params:
            raise SpecError("spec_invalid", f"{origin}: params.{name}: unknown parameter (known: {', '.join(sorted(params))})")
        params[name] = val
    version = str(override.get("version") or f"{base['version']}+override")
    return {"target": base["target"], "version": version, "params": params}


def _is_profile(override: dict) -> bool:
    """A complete hardware table (every parameter given) rather than a few values on top of a shipped one."""
    return set(override.get("params") or {}) >= set(Params.model_fields)


def shipped_targets() -> list[str]:
    return sorted(p.stem for p in SPEC_DIR.glob("*.toml"))


def load_spec(target: str = "trn2", override: str | Path | dict | None = None) -> HardwareSpec:
    """The hardware table of `target` (trn1, trn2; inf2 = trn1), with `override` applied on top.

    `override` is a TOML file (or its parsed dict) of the same shape: a few `[params]` on top of the
    shipped table, or a complete profile (every parameter) that stands alone, which is how a target
    without a shipped table (e.g. trn3) or a measured machine is modelled. A file that names a
    `target` must name the one being estimated: a trn3 profile never silently prices a trn2 kernel."""
    name = TARGET_ALIASES.get(target, target)
    origin = "override"
    if override is not None and not isinstance(override, dict):
        origin = str(override)
        override = _read_toml(Path(override))
    if override is not None:
        named = override.get("target")
        if named is not None and TARGET_ALIASES.get(str(named), str(named)) != name:
            raise SpecError("spec_target_mismatch", f"{origin}: a hardware table for target {named!r}, but the kernel "
                            f"targets {target!r}")
        unknown = set(override) - {"params", "version", "target"}
        if unknown:
            raise SpecError("spec_invalid", f"{origin}: unknown key(s) {sorted(unknown)}; expected target, version "
                            "and [params]")
    path = SPEC_DIR / f"{name}.toml"
    if override is not None and _is_profile(override):
        data = {"target": name, "version": str(override.get("version") or f"profile {Path(origin).name}"),
                "params": _with_sources(override["params"], origin)}
    elif not path.is_file():
        missing = f"; {origin} gives only some parameters" if override is not None else ""
        raise SpecError("spec_unknown_target", f"no hardware table for target {target!r} (shipped: "
                        f"{', '.join(shipped_targets())}){missing}: give a complete table with GRADER_PERF_SPEC")
    else:
        data = _read_toml(path)
        if override is not None:
            data = _merge(data, override, origin)
        else:
            origin = path.name
    try:
        return HardwareSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError("spec_invalid", one_line(exc, origin)) from exc
