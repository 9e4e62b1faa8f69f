"""The grader epoch: what must stay fixed for two scores to be comparable.

A `GraderEpoch` is a set of named parts (rubric id, version and hash; prompt template hashes; the
version of every evidence collector, simulator and static rules included) and a hash over them.
Calibration runs extend it with the drafter, model and parameters (`extend`), and scores are
compared only within one epoch.
"""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, computed_field

from grader.rubric import Rubric, load_rubric


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


def grader_epoch(rubric: Rubric | str | None = None) -> GraderEpoch:
    """The epoch of the grader as installed: rubric, prompt templates, collector versions."""
    from evidence.catalog import load_collectors
    from grader.prompting import load_templates

    rub = rubric if isinstance(rubric, Rubric) else load_rubric(rubric or "nki-kernel-review")
    templates = load_templates().hashes
    prompts = hashlib.sha256(json.dumps(templates, sort_keys=True).encode()).hexdigest()
    parts = {"rubric": f"{rub.id}@{rub.version}", "rubric_hash": rub.content_hash, "prompts": f"sha256:{prompts}"}
    parts.update({f"collector:{c.name}": c.version for c in load_collectors()})
    return GraderEpoch(parts=parts)
