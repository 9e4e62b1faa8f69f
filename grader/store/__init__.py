"""Storage: SQLAlchemy models, Alembic migrations, the hash-chained audit log, API keys, blobs."""

from grader.store.db import Store, StoreError

__all__ = ["Store", "StoreError"]
