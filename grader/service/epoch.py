"""The grader epoch recorded with every review and sign-off: which grader produced the draft
(drafter, its version, model and parameters, rubric hash, prompt template hashes)."""

from __future__ import annotations

import hashlib
import json

from grader.draft import Draft


def grader_epoch(draft: Draft) -> str:
    basis = {"drafter": draft.drafter.model_dump(mode="json"), "rubric": draft.rubric.hash,
             "prompts": draft.record.prompt_hashes}
    digest = hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()[:16]
    return f"{draft.drafter.name}-{digest}"
