"""Where the service keeps its data: the data directory (platformdirs by default) and the database URL."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from grader.settings import Settings
from grader.store.db import Store, sqlite_url

APP_NAME = "nki-grader"


def data_dir(settings: Settings) -> Path:
    return Path(settings.data_dir or platformdirs.user_data_dir(APP_NAME)).expanduser().resolve()


def database_url(settings: Settings) -> str:
    return settings.database_url or sqlite_url(data_dir(settings) / "grader.db")


def service_settings(settings: Settings) -> Settings:
    """Settings for a server or worker: the model-reply cache lives in the data directory unless
    GRADER_CACHE_DIR says otherwise, so requests never write outside it."""
    if "cache_dir" in settings.model_fields_set:
        return settings
    return settings.model_copy(update={"cache_dir": data_dir(settings) / "cache"})


def open_store(settings: Settings) -> Store:
    return Store(database_url(settings))
