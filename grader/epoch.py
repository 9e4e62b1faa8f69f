"""The grader epoch: what must stay fixed for two scores to be comparable.

A `GraderEpoch` is a set of named parts and a hash over them: the package version, the rubric (id,
version and hash), the prompt templates (a hash over their hashes), the version of every evidence
collector, and the simulator and static rules as collector version plus a hash of their source
(their behaviour changes with code that no version number tracks). Calibration runs extend it with
the drafter, model and parameters (`extend`), and scores are compared only within one epoch.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from importlib.resources import files
from importlib.resources.abc import Traversable

from pydantic import BaseModel, ConfigDict, computed_field

from grader.prompting import Templates
from grader.rubric import Rubric, load_rubric

DISTRIBUTION = "nki-grader"


class GraderEpoch(BaseModel):
    model_config = ConfigDict(frozen=True)

    parts: dict[str, str]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def hash(self) -> str:
        canon = json.dumps(self.parts, sort_keys=True, separators=(",", ":"))
        return "epoch:" + hashlib.sha256(canon.encode()).hexdigest()[:16]

    def extend(self, **parts: str) -> GraderEpoch:
        """A new epoch with more parts (e.g. drafter, model, parameters)."""
        return GraderEpoch(parts={**self.parts, **parts})


def package_version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # running from a checkout that was never installed
        return "0+unknown"


def source_hash(package: str) -> str:
    """sha256 over the package's Python sources (relative path and bytes, in sorted order)."""
    digest = hashlib.sha256()

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.is_dir() and child.name != "__pycache__":
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".py"):
                digest.update(f"{prefix}{child.name}\0".encode())
                digest.update(child.read_bytes())

    walk(files(package), "")
    return "sha256:" + digest.hexdigest()


def grader_epoch(rubric: Rubric | str | None = None, templates: Templates | None = None) -> GraderEpoch:
    """The epoch of the grader as installed: package, rubric, prompt templates, collectors, simulator, rules."""
    from evidence.catalog import load_collectors
    from evidence.nki.collector import SimulationCollector
    from evidence.static.collectors import STATIC_VERSION
    from grader.prompting import load_templates

    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric or "nki-kernel-review")
    hashes = (templates or load_templates()).hashes
    prompts = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
    parts = {"grader": package_version(), "rubric": f"{rub.id}@{rub.version}", "rubric_hash": rub.content_hash,
             "prompts": f"sha256:{prompts}",
             "simulator": f"{SimulationCollector.name}@{SimulationCollector.version} {source_hash('evidence.nki')}",
             "static_rules": f"nki-static@{STATIC_VERSION} {source_hash('evidence.static')}",
             # the cost model and the error model decide the performance and numerics evidence drafts cite
             "cost_model": f"perf {source_hash('evidence.perf')}",
             "numerics": f"numerics {source_hash('evidence.numerics')}"}
    parts.update({f"collector:{c.name}": c.version for c in load_collectors()})
    return GraderEpoch(parts=parts)
