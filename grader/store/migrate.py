"""Alembic migrations, driven from Python (`grader db upgrade`, and `grader serve` at start-up)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from grader.store.db import Store

MIGRATIONS = Path(__file__).with_name("migrations")


def _config(store: Store) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = store.engine
    return config


def head_revision() -> str:
    return ScriptDirectory(str(MIGRATIONS)).get_current_head() or ""


def current_revision(store: Store) -> str | None:
    with store.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(store: Store) -> str:
    """Bring the schema to the newest revision; returns it. Serialised across processes on Postgres."""
    command.upgrade(_config(store), "head")
    return head_revision()


def is_current(store: Store) -> bool:
    return current_revision(store) == head_revision()
