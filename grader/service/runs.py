"""Which calibration-run store the service's drafts are checked against."""

from __future__ import annotations

from grader.consistency.store import JsonFileStore, RunStore
from grader.service.config import data_dir
from grader.settings import Settings
from grader.store.db import Store


def run_store(store: Store, settings: Settings) -> RunStore:
    # Calibration runs live as JSON files in the data directory until they move into the database.
    return JsonFileStore(data_dir(settings))
