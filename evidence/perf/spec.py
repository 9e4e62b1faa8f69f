"""Hardware tables of the cost model: one TOML file per target under `specs/`, every number with its source.

A table is versioned; an estimate records the version it used. Any parameter can be overridden by a
TOML file of the same shape (`[params] name = 3.0` or `name = { value = 3.0, source = "..." }`),
e.g. to model a new SDK's DMA figures. The cost model is calibrated only through these documented
physical parameters, never through per-kernel constants (README: validation against the matmul
tutorial).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

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


def _merge(base: dict, override: dict, origin: str) -> dict:
    params = dict(base["params"])
    for name, val in (override.get("params") or {}).items():
        if name not in params:
            raise SpecError("spec_invalid", f"{origin}: params.{name}: unknown parameter (known: {', '.join(sorted(params))})")
        if isinstance(val, dict):
            params[name] = {"value": val.get("value"), "source": val.get("source") or f"override {origin}"}
        else:
            params[name] = {"value": val, "source": f"override {origin}"}
    unknown = set(override) - {"params", "version", "target"}
    if unknown:
        raise SpecError("spec_invalid", f"{origin}: unknown key(s) {sorted(unknown)}; expected [params] and version")
    version = str(override.get("version") or f"{base['version']}+override")
    return {"target": base["target"], "version": version, "params": params}


def load_spec(target: str = "trn2", override: str | Path | dict | None = None) -> HardwareSpec:
    """The hardware table of `target` (trn1, trn2; inf2 = trn1), with `override` applied on top."""
    name = TARGET_ALIASES.get(target, target)
    path = SPEC_DIR / f"{name}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in SPEC_DIR.glob("*.toml"))
        raise SpecError("spec_unknown_target", f"no hardware table for target {target!r}; known: {', '.join(known)}")
    data = _read_toml(path)
    origin = str(path.name)
    if override is not None:
        if isinstance(override, dict):
            data, origin = _merge(data, override, "override"), "override"
        else:
            opath = Path(override)
            data, origin = _merge(data, _read_toml(opath), str(opath)), str(opath)
    try:
        return HardwareSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError("spec_invalid", one_line(exc, origin)) from exc
