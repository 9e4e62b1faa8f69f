"""Which calibration-run store the service's drafts are checked against: the service database."""

from __future__ import annotations

from grader.consistency.store import RunStore
from grader.settings import Settings
from grader.store.db import Store
from grader.store.runs import SqlRunStore


def run_store(store: Store, settings: Settings) -> RunStore:
    return SqlRunStore(store)
