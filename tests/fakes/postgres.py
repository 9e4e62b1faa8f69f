"""A throw-away PostgreSQL server on loopback for tests and benchmarks: initdb into a temp dir, pg_ctl
start on a free port, stop and delete at exit. PostgreSQL refuses to run as root, so as root the
server runs as the `postgres` system user (created by Debian's package)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path


class PostgresUnavailable(RuntimeError):
    pass


def _bin(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if not found:
        raise PostgresUnavailable(f"{name} not found (install Debian's postgresql package; .ci/run does)")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TempPostgres:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="grader-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.run_as: str | None = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError as exc:
                raise PostgresUnavailable("running as root and there is no 'postgres' user to run the server") from exc
            self.run_as = "postgres"
            shutil.chown(self.root, "postgres")
            os.chmod(self.root, 0o700)

    def _run(self, *cmd: str, timeout: float = 60) -> None:
        full = ["runuser", "-u", self.run_as, "--", *cmd] if self.run_as else list(cmd)
        result = subprocess.run(full, capture_output=True, text=True, timeout=timeout, cwd="/")
        if result.returncode != 0:
            raise PostgresUnavailable(f"{Path(cmd[0]).name} failed: {(result.stderr or result.stdout).strip()[-300:]}")

    def start(self) -> TempPostgres:
        self._run(_bin("initdb"), "-D", str(self.data), "-U", "grader", "--auth=trust", "-E", "UTF8", "--no-sync")
        options = (f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "log"), "-w", "start")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://grader@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh empty database; returns its SQLAlchemy URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=grader dbname=postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run(_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        except (PostgresUnavailable, subprocess.TimeoutExpired):
            pass
        shutil.rmtree(self.root, ignore_errors=True)
