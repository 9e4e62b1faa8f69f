"""Run every applicable collector over a submission and bundle the results."""

from __future__ import annotations

import time
import traceback
from collections.abc import Mapping
from typing import Any

from evidence.catalog import load_collectors
from evidence.collector import Collector
from evidence.corroborate import CORROBORATED, CORROBORATION_VERSION, MEASURED, corroborate
from evidence.model import AnalyzerFailure, EvidenceBundle, EvidenceItem, dedupe_ids, make_id, sort_items
from evidence.submission import Submission


def _failure(collector: Collector | str, exc: BaseException) -> AnalyzerFailure:
    tail = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {tail[0].filename.rsplit('/', 1)[-1]}:{tail[0].lineno})" if tail else ""
    message = (str(exc).splitlines() or [""])[0][:500]
    name, analyzer = (collector, collector) if isinstance(collector, str) else (collector.name, collector.analyzer)
    return AnalyzerFailure(
        id=make_id("failure", name),
        analyzer=analyzer,
        error_type=type(exc).__name__,
        message=f"{message}{where}",
    )


def gather(
    submission: Submission,
    *,
    collectors: list[type[Collector]] | None = None,
    exclude: tuple[str, ...] = (),
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> EvidenceBundle:
    """Evidence for `submission`. A collector that raises becomes an AnalyzerFailure, never a lost bundle.

    `options` maps a collector name to overrides of its declared attributes, e.g.
    `{"nki-simulator": {"timeout_s": 30}}`.
    """
    options = options or {}
    classes = list(collectors) if collectors is not None else list(load_collectors())
    items: list[EvidenceItem] = []
    failures: list[AnalyzerFailure] = []
    analyzers: dict[str, str] = {}
    timings: dict[str, float] = {}
    for cls in classes:
        if cls.name in exclude:
            continue
        collector = cls(**options.get(cls.name, {}))
        if not collector.applies(submission):
            continue
        analyzers[cls.name] = cls.version
        start = time.perf_counter()
        try:
            produced = list(collector.collect(submission))
        except Exception as exc:  # the unit boundary: a crash is a value, not a lost bundle
            failures.append(_failure(collector, exc))
        else:
            items.extend(produced)
        timings[cls.name] = round(time.perf_counter() - start, 6)
        for stage, seconds in collector.timings.items():
            timings[f"{cls.name}.{stage}"] = round(seconds, 6)
    if any(i.kind in CORROBORATED or i.kind in MEASURED or i.kind == "sim.output" for i in items):  # against the trace
        analyzers["corroboration"] = CORROBORATION_VERSION
        try:
            items = corroborate(items)
        except Exception as exc:  # the boundary: the findings stay as they were, the failure is recorded
            failures.append(_failure(f"corroboration@{CORROBORATION_VERSION}", exc))
    return EvidenceBundle(
        submission_hash=submission.content_hash,
        items=sort_items(dedupe_ids(items)),
        failures=tuple(sorted(failures, key=lambda f: f.id)),
        analyzers=dict(sorted(analyzers.items())),
        timings=timings,
    )
