"""Drafters turn an evidence bundle into a draft per rubric criterion.

`rules` is the deterministic offline default; `llm` drafts through litellm + instructor and is
imported lazily so the offline path never pays for litellm's import.
"""

from __future__ import annotations

from grader.drafting.base import Drafter
from grader.drafting.rules import RulesDrafter
from grader.errors import GraderError
from grader.settings import Settings


def make_drafter(settings: Settings) -> Drafter:
    kind = settings.resolved_drafter()
    if kind == "rules":
        return RulesDrafter()
    if kind == "llm":
        if not settings.model:
            raise GraderError("the llm drafter needs a model: pass --model or set GRADER_MODEL")
        from grader.drafting.llm import LLMDrafter  # lazy: litellm costs seconds to import

        return LLMDrafter(settings)
    raise GraderError(f"unknown drafter {kind!r}; use 'rules' or 'llm'")


__all__ = ["Drafter", "RulesDrafter", "make_drafter"]
