"""Evidence profiles: what kinds of evidence a submission produced, comparable across submissions.

A profile is a set of features: each evidence kind present, each kind with its severity, and each
kind with a categorical label value (`nki.loop[iterator=affine_range]`). Labels that carry
identifiers, line lists or prose (a function's name, a message) are left out, so two submissions
that differ only in names or layout have the same profile. Similarity is Jaccard over features.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from evidence.model import EvidenceBundle

# Label keys whose values name things in the submission or are free text: never profile features.
IDENTIFIER_LABELS = frozenset({
    "function", "name", "vars", "lines", "message", "excerpt", "builtins", "cuda", "nki", "claim", "baseline",
    "shape", "launch_line", "cuda_file", "dims", "inputs", "grid", "block", "rule_version", "text", "file",
})
_CATEGORICAL = re.compile(r"^[A-Za-z0-9_.+:-]{1,40}$")


def profile(bundle: EvidenceBundle) -> tuple[str, ...]:
    features: set[str] = set()
    for item in bundle.items:
        features.add(item.kind)
        features.add(f"{item.kind}@{item.severity.value}")
        for key, value in item.labels.items():
            if key not in IDENTIFIER_LABELS and _CATEGORICAL.match(value):
                features.add(f"{item.kind}[{key}={value}]")
    for failure in bundle.failures:
        features.add(f"analyzer_failure[{failure.analyzer.split('@')[0]}]")
    return tuple(sorted(features))


def similarity(a: Iterable[str], b: Iterable[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)
