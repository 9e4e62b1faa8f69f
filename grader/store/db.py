"""The database handle: an engine and two kinds of sessions (reads, and writes that take the write
lock up front on SQLite so read-then-write transactions never deadlock on lock upgrades)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.orm import Session, sessionmaker

from grader.errors import GraderError


class StoreError(GraderError):
    """The database cannot be opened, is unreachable, or its schema is not current."""


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


class Store:
    def __init__(self, url: str) -> None:
        try:
            parsed = make_url(url)
        except ArgumentError as exc:
            raise StoreError("not a database URL (expected sqlite:///PATH or postgresql+psycopg://...)",
                             where="GRADER_DATABASE_URL") from exc
        self.url = url
        self.dialect = parsed.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise StoreError(f"unsupported database {self.dialect!r}; use sqlite or postgresql+psycopg",
                             where="GRADER_DATABASE_URL")
        self.engine = _sqlite_engine(url) if self.dialect == "sqlite" else create_engine(
            # More connections than the API's 40 worker threads, so no request waits for the pool.
            url, pool_pre_ping=True, pool_size=20, max_overflow=30)
        self._reads = sessionmaker(self.engine, expire_on_commit=False)
        self._writes = sessionmaker(self.engine.execution_options(grader_write=True), expire_on_commit=False)

    @contextmanager
    def read(self) -> Iterator[Session]:
        with self._reads() as session:
            yield session

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A transaction that commits on success and rolls back on error."""
        with self._writes() as session, session.begin():
            yield session

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def dispose(self) -> None:
        self.engine.dispose()


def _sqlite_engine(url: str) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (below)
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn) -> None:  # type: ignore[no-untyped-def]
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("grader_write") else "BEGIN")

    return engine
