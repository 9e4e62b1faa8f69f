"""Alembic environment: runs on the engine handed in by grader.store.migrate (no alembic.ini)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from grader.store.models import Base

engine = context.config.attributes["engine"]
with engine.connect() as connection:
    if connection.dialect.name == "postgresql":
        # Two processes upgrading at once (serve on two hosts) would race on DDL: take a lock.
        connection.execute(text("SELECT pg_advisory_lock(72120001)"))
        connection.commit()
    try:
        context.configure(connection=connection, target_metadata=Base.metadata,
                          render_as_batch=connection.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()
    finally:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_unlock(72120001)"))
            connection.commit()
