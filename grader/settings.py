"""Runtime settings from the environment (GRADER_*). Built in the app factory or CLI, never at import.

A bad value is a `ConfigError` naming the variable, the value and what is accepted, in one line.
"""

from __future__ import annotations

import types
import typing
from enum import Enum, StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import annotated_types
from platformdirs import user_cache_dir
from pydantic import Field, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

from evidence.sandbox.config import SandboxConfig, SandboxMode
from evidence.validation import error_message
from grader.errors import GraderError
from grader.resources import search_path
from grader.submission import Limits

if TYPE_CHECKING:
    from grader.evidence_cache import EvidenceCache


ENV_PREFIX = "GRADER_"


class DrafterChoice(StrEnum):
    auto = "auto"  # llm when a model is configured, rules otherwise
    rules = "rules"
    llm = "llm"


class LLMMode(StrEnum):
    """How instructor asks for structured output."""

    tools = "tools"
    json = "json"
    md_json = "md_json"


class ConfigError(GraderError):
    """A setting (GRADER_* variable or option) has a value that is not accepted."""


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    # Drafting. With no model configured the deterministic rules drafter is used.
    drafter: DrafterChoice = DrafterChoice.auto
    model: str | None = None  # a litellm model string, e.g. "openai/gpt-4o-mini"
    api_base: str | None = None
    samples: int = Field(default=1, ge=1, le=16)
    temperature: float = 0.0
    seed: int = 7
    timeout_s: float = Field(default=60.0, gt=0)  # one model request, not counting the wait for a client-side slot
    # Requests in flight at most; the client starts at one and adapts to the server (grader.drafting.concurrency).
    max_concurrency: int = Field(default=8, ge=1)
    llm_queue_delay_s: float = Field(default=1.0, ge=0)  # extra latency that counts as queueing on the server
    budget_usd: float | None = Field(default=2.0, gt=0)  # USD per evaluation (priced calls only)
    # Models the HTTP API accepts in a request's `model` (comma-separated); GRADER_MODEL is always allowed.
    allowed_models: str = ""
    cache_dir: Path = Field(default_factory=lambda: Path(user_cache_dir("nki-grader")))
    use_cache: bool = True
    # Evidence bundles reused for identical submissions, options and evidence code (grader.evidence_cache),
    # under cache_dir/evidence; at most evidence_cache_entries files, the least recently used go first.
    evidence_cache: bool = True
    evidence_cache_entries: int = Field(default=2000, ge=1)
    llm_mode: LLMMode = LLMMode.tools
    api_key: str | None = None  # otherwise the provider's usual variable (OPENAI_API_KEY, ...)
    max_prompt_tokens: int = Field(default=6000, ge=500)
    # The one retry policy (grader/drafting/retry.py): transport retries, then validation re-asks.
    retry_attempts: int = Field(default=4, ge=1)
    retry_backoff_s: float = Field(default=0.5, ge=0)
    retry_backoff_max_s: float = Field(default=8.0, ge=0)
    retry_deadline_s: float | None = None  # default: max(120 s, 2 x timeout_s)
    max_reasks: int = Field(default=2, ge=0)
    # Prices for models missing from litellm's table (USD per million tokens), for the budget.
    input_cost_per_mtok: float | None = None
    output_cost_per_mtok: float | None = None

    # Submission limits (bytes); the defaults live in grader.submission.Limits.
    max_file_bytes: int = Limits.max_file_bytes
    max_submission_bytes: int = Limits.max_submission_bytes
    max_files: int = Limits.max_files

    # Simulation limits of the sandboxed children (kernel and reference run in separate ones).
    sim_timeout_s: float = Field(default=120.0, gt=0)
    sim_reference_timeout_s: float = Field(default=60.0, gt=0)
    sim_memory_mb: int = Field(default=6144, ge=256)
    sim_workers: int = Field(default=2, ge=1)  # sandboxed children running at once in this process
    # Sandbox for submitted code (README "Security"); "off" is the operator's explicit, logged opt-out.
    sandbox: SandboxMode = SandboxMode.bwrap
    sandbox_bwrap: str = "bwrap"
    sandbox_pids_cgroup: str | None = None  # where per-child pids cgroups go when running as root
    import_policy: bool = True  # off: no static gate and no run-time blocking (the sandbox alone holds)

    def evidence_store(self) -> EvidenceCache | None:
        from grader.evidence_cache import EvidenceCache  # not at import: it needs grader.epoch, which needs settings

        return EvidenceCache(self.cache_dir / "evidence", self.evidence_cache_entries) if self.evidence_cache else None

    def sandbox_config(self) -> SandboxConfig:
        return SandboxConfig(mode=self.sandbox, bwrap=self.sandbox_bwrap, pids_cgroup=self.sandbox_pids_cgroup,
                             workers=self.sim_workers, import_policy=self.import_policy)

    # Cost model: a TOML file overriding the hardware tables (evidence/perf/specs/*.toml).
    perf_spec: str | None = None

    def collector_options(self) -> dict[str, dict[str, object]]:
        """Per-collector overrides handed to evidence.gather (evidence never reads grader settings)."""
        sim = {"timeout_s": self.sim_timeout_s, "memory_limit_bytes": self.sim_memory_mb * 2**20,
               "sandbox": self.sandbox_config()}
        return {"nki-simulator": {**sim, "reference_timeout_s": self.sim_reference_timeout_s},
                "perf": {**sim, "spec_override": self.perf_spec},
                "numerics": {**sim, "reference_timeout_s": self.sim_reference_timeout_s}}

    rubric: str = "nki-kernel-review"
    # Calibration runs and audits (JSON files until the service's database store replaces them);
    # default: the user's data directory (platformdirs).
    data_dir: Path | None = None
    # Directories searched before the shipped rubrics / prompt templates (os.pathsep-separated).
    rubric_path: str | None = None
    prompt_path: str | None = None

    def rubric_dirs(self) -> tuple[Path, ...]:
        return search_path("rubrics", self.rubric_path)

    def prompt_dirs(self) -> tuple[Path, ...]:
        return search_path("prompts", self.prompt_path)

    # Service (issue 12): storage, durable jobs, auth (the database defaults to SQLite in data_dir).
    database_url: str | None = None  # default: SQLite (WAL) in data_dir; postgresql+psycopg://... for teams
    auth: Literal["on", "off"] = "on"  # off: local single-user use only, refused on non-loopback binds
    workers: int = Field(default=2, ge=0, le=64)  # worker processes started by `grader serve`
    job_attempts: int = Field(default=3, ge=1, le=20)
    job_lease_s: float = Field(default=30.0, ge=0.5)
    queue_max: int = Field(default=1000, ge=1)
    max_wait_s: float = Field(default=60.0, ge=0)
    shutdown_grace_s: float = Field(default=30.0, ge=0)
    # Reviewer pages (grader.web): signed session cookies. Several servers behind one database share
    # GRADER_SESSION_SECRET; by default each data directory keeps its own random secret.
    session_secret: str | None = Field(default=None, min_length=32)
    session_hours: float = Field(default=12.0, gt=0, le=24 * 30)

    def model_allow_list(self) -> list[str]:
        names = [m.strip() for m in self.allowed_models.split(",") if m.strip()]
        return sorted({*names, *([self.model] if self.model else [])})

    def resolved_drafter(self) -> str:
        choice = DrafterChoice(self.drafter)  # also when a job's overrides put a plain string here
        if choice is not DrafterChoice.auto:
            return choice.value
        return "llm" if self.model else "rules"

    @classmethod
    def load(cls, **overrides: object) -> Settings:
        """Settings from the environment and `overrides`; a bad value is one `ConfigError` line."""
        try:
            return cls(**overrides)
        except ValidationError as exc:
            raise config_error(exc, cls) from exc


def accepted_values(info: FieldInfo) -> str:
    """What a setting accepts, in words: 'one of auto, rules, llm', 'an integer from 1 to 16', ..."""
    kind = info.annotation
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        kind = next((a for a in typing.get_args(kind) if a is not type(None)), kind)
    bounds = {type(m).__name__: getattr(m, type(m).__name__.lower()) for m in info.metadata
              if isinstance(m, (annotated_types.Ge, annotated_types.Gt, annotated_types.Le, annotated_types.Lt))}
    if isinstance(kind, type) and issubclass(kind, Enum):
        return "one of " + ", ".join(str(m.value) for m in kind)
    if typing.get_origin(kind) is Literal:
        return "one of " + ", ".join(str(v) for v in typing.get_args(kind))
    if kind is bool:
        return "true or false (1/0, yes/no)"
    noun = {int: "an integer", float: "a number", Path: "a directory path", str: "text"}.get(kind, "a valid value")  # type: ignore[call-overload]
    if "Ge" in bounds and "Le" in bounds:
        return f"{noun} from {bounds['Ge']} to {bounds['Le']}"
    limits = [f"{op} {bounds[name]}" for name, op in (("Ge", ">="), ("Gt", ">"), ("Le", "<="), ("Lt", "<")) if name in bounds]
    return " ".join([noun, *limits[:1]]) + "".join(f" and {x}" for x in limits[1:])


def config_error(exc: ValidationError, model: type[BaseSettings] = Settings) -> ConfigError:
    err = exc.errors()[0]
    name = str(err["loc"][0]) if err.get("loc") else ""
    info = model.model_fields.get(name)
    variable = ENV_PREFIX + name.upper()
    if info is None:
        return ConfigError(f"{variable}: {error_message(err)}")
    return ConfigError(f"{variable}={err.get('input')!r} is not accepted: expected {accepted_values(info)}")
