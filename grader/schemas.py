"""JSON Schemas of the models other tools rely on (`grader schema`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from evidence.model import AnalyzerFailure, EvidenceBundle, EvidenceItem, Location
from evidence.submission import Manifest
from grader.draft import Citation, ConsistencyCheck, CriterionDraft, Draft
from grader.rubric import Criterion, Level, Rubric

MODELS: dict[str, type[BaseModel]] = {
    "Location": Location, "EvidenceItem": EvidenceItem, "AnalyzerFailure": AnalyzerFailure,
    "EvidenceBundle": EvidenceBundle, "Manifest": Manifest, "Rubric": Rubric, "Criterion": Criterion,
    "Level": Level, "Draft": Draft, "CriterionDraft": CriterionDraft, "Citation": Citation,
    "ConsistencyCheck": ConsistencyCheck,
}


def json_schemas(names: list[str] | None = None) -> dict[str, Any]:
    chosen = names or list(MODELS)
    unknown = [n for n in chosen if n not in MODELS]
    if unknown:
        raise KeyError(f"unknown model(s) {unknown}; known: {sorted(MODELS)}")
    return {n: MODELS[n].model_json_schema(mode="serialization") for n in chosen}
