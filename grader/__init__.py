"""NKI Grader: rubric drafts for NKI kernel reviews, standing on deterministic evidence."""

from grader.errors import GraderError


def evaluate(submission, **kwargs):  # noqa: ANN001, ANN201 - see grader.evaluate.evaluate
    from grader.evaluate import evaluate as _evaluate

    return _evaluate(submission, **kwargs)


__all__ = ["GraderError", "evaluate"]
