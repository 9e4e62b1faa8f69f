"""Calibration epochs: the grader epoch extended with the drafter, its model and parameters.

Scores are compared only within one epoch: a calibration run certifies drafts of its own epoch,
and a draft is checked against the newest run of the epoch it was drafted in.
"""

from __future__ import annotations

from grader.draft import DrafterInfo
from grader.epoch import GraderEpoch, grader_epoch
from grader.rubric import Rubric
from grader.settings import Settings


def drafter_info(settings: Settings) -> DrafterInfo:
    """What identifies the drafter a run uses, before any draft exists (for the epoch)."""
    if settings.resolved_drafter() == "llm":
        from grader.drafting.llm import LLM_DRAFTER_VERSION

        return DrafterInfo(name="llm", version=LLM_DRAFTER_VERSION, model=settings.model, params={
            "samples": settings.samples, "temperature": settings.temperature, "seed": settings.seed,
            "mode": settings.llm_mode, "max_reasks": settings.max_reasks, "max_prompt_tokens": settings.max_prompt_tokens,
            "api_base": settings.api_base,
        })
    from grader.drafting.rules import RULES_DRAFTER_VERSION

    return DrafterInfo(name="rules", version=RULES_DRAFTER_VERSION)


def calibration_epoch(rubric: Rubric, settings: Settings) -> GraderEpoch:
    """The grader epoch extended with the drafter, model and parameters: scores compare only within it."""
    info = drafter_info(settings)
    params = ",".join(f"{k}={info.params[k]}" for k in sorted(info.params))
    return grader_epoch(rubric).extend(drafter=f"{info.name}@{info.version}", model=info.model or "-", params=params or "-")
