"""CLI commands of the service: serve, worker, keys, db, log (registered by grader.cli)."""

from __future__ import annotations

import ipaddress
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Optional

import typer
from rich.console import Console
from sqlalchemy.exc import SQLAlchemyError

from grader.errors import GraderError

keys_app = typer.Typer(no_args_is_help=True, help="Create, revoke and list API keys.")
db_app = typer.Typer(no_args_is_help=True, help="Database schema migrations.")
log_app = typer.Typer(no_args_is_help=True, help="The hash-chained audit log.")
err = Console(stderr=True)


def _fail(message: str, code: int = 2) -> None:
    err.print(f"[bold red]error:[/] {' '.join(message.split())}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _db_error(exc: SQLAlchemyError) -> str:
    return f"database: {str(getattr(exc, 'orig', None) or exc).splitlines()[0]}"


@contextmanager
def _one_line_errors() -> Iterator[None]:
    """Bad input, a bad database URL or an unreachable database: one line on stderr, exit 2."""
    try:
        yield
    except GraderError as exc:
        _fail(exc.one_line())
    except SQLAlchemyError as exc:
        _fail(_db_error(exc))


def _open(migrate_schema: bool, **overrides: object):  # type: ignore[no-untyped-def]
    from grader.service.config import open_store, service_settings
    from grader.settings import Settings
    from grader.store import migrate

    settings = service_settings(Settings.load(**{k: v for k, v in overrides.items() if v is not None}))
    store = open_store(settings)
    if migrate_schema:
        migrate.upgrade(store)
    elif not migrate.is_current(store):
        _fail(f"the database schema is at {migrate.current_revision(store) or 'nothing'}, not "
              f"{migrate.head_revision()}: run `grader db upgrade`")
    return settings, store


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    host: str = typer.Option("127.0.0.1", help="bind address"),
    port: int = typer.Option(8000, help="port"),
    workers: Optional[int] = typer.Option(None, "--workers", min=0, max=64, help="worker processes (GRADER_WORKERS, default 2)"),
    database_url: Optional[str] = typer.Option(None, "--database-url", help="GRADER_DATABASE_URL (default: SQLite in the data dir)"),
) -> None:
    """Serve the HTTP API with N worker processes; migrates the database first."""
    import uvicorn

    from grader.api.app import create_app
    from grader.service.config import database_url as resolve_url
    from grader.service.logs import configure_logging
    from grader.service.supervisor import WorkerPool

    with _one_line_errors():
        settings, store = _open(True, workers=workers, database_url=database_url)
    if settings.auth == "off" and not is_loopback(host):
        _fail(f"GRADER_AUTH=off is for local single-user use; refusing to bind to the non-loopback address {host}")
    configure_logging()
    env = {**os.environ, "GRADER_DATABASE_URL": resolve_url(settings), "GRADER_CACHE_DIR": str(settings.cache_dir)}
    pool = WorkerPool(store, settings.workers, env, settings.shutdown_grace_s)
    pool.start()
    # uvicorn re-raises the signal that stopped it once it has shut down; with the default handler
    # that would end this process before the workers are stopped.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    try:
        # Keep-alive longer than clients' poll intervals and typical proxy idle timeouts, so a client
        # never reuses a connection the server is closing.
        uvicorn.run(create_app(settings, store, settle=True), host=host, port=port, log_config=None, timeout_keep_alive=75,
                    timeout_graceful_shutdown=int(settings.shutdown_grace_s) or None)
    finally:
        pool.stop()
        store.dispose()


def worker(
    parent: Optional[int] = typer.Option(None, "--parent", hidden=True, help="exit when this process is gone"),
    max_jobs: Optional[int] = typer.Option(None, "--max-jobs", min=1, help="exit after this many jobs"),
) -> None:
    """Claim and run jobs from the database until stopped (SIGTERM finishes the running job)."""
    from grader.service.logs import configure_logging
    from grader.service.worker import Worker

    from grader.sandbox import announce

    with _one_line_errors():
        settings, store = _open(False)
    configure_logging()
    announce(settings)  # a worker runs submitted code: an unsandboxed one says so at start-up
    w = Worker(store, settings, parent_pid=parent)
    w.install_signal_handlers()
    w.run(max_jobs=max_jobs)
    store.dispose()
    if w.abandoned_job is not None:
        os._exit(0)  # the abandoned job's thread cannot be interrupted; this process ends with it


@keys_app.command("create")
def keys_create(
    role: str = typer.Option(..., "--role", help="submitter | reviewer | lead | admin"),
    name: str = typer.Option(..., "--name", help="who holds the key"),
) -> None:
    """Create an API key; prints the token (shown once) on stdout, the key id on stderr."""
    from grader.store.keys import create_key

    with _one_line_errors():
        _, store = _open(True)
        key, token = create_key(store, name=name, role=role)
    err.print(f"created key {key.id} ({key.name}, {key.role}); the token below is shown once", highlight=False)
    typer.echo(token)


@keys_app.command("revoke")
def keys_revoke(key: str = typer.Argument(..., help="key id or name")) -> None:
    """Revoke a key (by id, or by name when one live key has it)."""
    from grader.store.keys import revoke_key

    with _one_line_errors():
        _, store = _open(True)
        row = revoke_key(store, key)
    typer.echo(f"revoked key {row.id} ({row.name}, {row.role})")


@keys_app.command("list")
def keys_list() -> None:
    """List keys (never their tokens)."""
    from grader.store.keys import list_keys

    with _one_line_errors():
        _, store = _open(True)
    for k in list_keys(store):
        typer.echo(f"{k.id}\t{k.role}\t{k.name}\t{'revoked' if k.revoked_at else 'live'}")


@db_app.command("upgrade")
def db_upgrade(database_url: Optional[str] = typer.Option(None, "--database-url")) -> None:
    """Apply pending migrations (also run by `grader serve` at start-up)."""
    from grader.service.config import database_url as resolve_url

    from grader.store.migrate import head_revision

    with _one_line_errors():
        settings, _ = _open(True, database_url=database_url)

    typer.echo(f"database at {head_revision()}: {resolve_url(settings)}")


@log_app.command("verify")
def log_verify() -> None:
    """Walk the audit log's hash chain; exit 1 naming the first modified, inserted or removed entry."""
    from grader.store.audit_log import verify

    with _one_line_errors():
        _, store = _open(False)
        with store.read() as session:
            report = verify(session)
    if not report.ok:
        _fail(f"audit log broken: {report.problem}", code=1)
    typer.echo(f"audit log intact: {report.entries} entries, head {report.head}")


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.command()(worker)
    app.add_typer(keys_app, name="keys")
    app.add_typer(db_app, name="db")
    app.add_typer(log_app, name="log")
