"""Deterministic evidence about NKI kernel submissions: static analysis, simulation, numerics, performance.

This package never imports `grader`, litellm, instructor or fastapi (DESIGN §2).
"""

from evidence.model import AnalyzerFailure, EvidenceBundle, EvidenceItem, Location, Severity
from evidence.submission import Submission


def gather(submission: Submission, **kwargs):  # noqa: ANN201 - re-exported, see evidence.gather.gather
    from evidence.gather import gather as _gather

    return _gather(submission, **kwargs)


__all__ = ["AnalyzerFailure", "EvidenceBundle", "EvidenceItem", "Location", "Severity", "Submission", "gather"]
