"""Prometheus metrics. Job and draft figures are read from the database at scrape time, so they cover
every worker on every machine; HTTP figures are this process's own."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from sqlalchemy import case, func, select

from grader.store.db import Store
from grader.store.models import DraftRow, Job

LATENCY_BUCKETS = (0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600)


class StoreCollector:
    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self):  # type: ignore[no-untyped-def]
        with self.store.read() as session:
            by_state = session.execute(select(Job.kind, Job.state, func.count()).group_by(Job.kind, Job.state)).all()
            buckets = session.execute(select(
                func.count(), func.coalesce(func.sum(DraftRow.latency_s), 0.0),
                func.coalesce(func.sum(DraftRow.model_calls), 0), func.coalesce(func.sum(DraftRow.cost_usd), 0.0),
                *[func.coalesce(func.sum(case((DraftRow.latency_s <= b, 1), else_=0)), 0) for b in LATENCY_BUCKETS],
            )).one()
        jobs = GaugeMetricFamily("grader_jobs", "Jobs by kind and state", labels=["kind", "state"])
        counts = {("evaluation", state): 0 for state in ("queued", "running", "done", "failed")}
        counts.update({(kind, state): n for kind, state, n in by_state})
        for (kind, state), n in sorted(counts.items()):
            jobs.add_metric([kind, state], n)
        yield jobs
        count, total, calls, cost, *cumulative = buckets
        latency = HistogramMetricFamily("grader_evaluation_latency_seconds",
                                        "Time from submission to finished draft")
        latency.add_metric([], [(str(float(b)), int(c)) for b, c in zip(LATENCY_BUCKETS, cumulative)]
                           + [("+Inf", int(count))], sum_value=float(total))
        yield latency
        yield CounterMetricFamily("grader_model_calls", "Model calls made for stored drafts", value=int(calls))
        yield CounterMetricFamily("grader_model_cost_usd", "Model cost of stored drafts (USD)", value=float(cost))


def build_registry(store: Store) -> tuple[CollectorRegistry, Counter, Histogram]:
    registry = CollectorRegistry()
    registry.register(StoreCollector(store))  # type: ignore[arg-type]
    requests = Counter("grader_http_requests", "HTTP requests", ["method", "route", "status"], registry=registry)
    duration = Histogram("grader_http_request_duration_seconds", "HTTP request duration", ["route"], registry=registry)
    return registry, requests, duration
