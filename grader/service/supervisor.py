"""Worker processes for `grader serve --workers N`: started as `grader worker` children, restarted
when one dies, stopped gracefully (SIGTERM; after the grace period SIGKILL and their jobs re-queued)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from grader.service import jobs
from grader.store.db import Store

log = logging.getLogger("grader.supervisor")


class WorkerPool:
    def __init__(self, store: Store, count: int, env: dict[str, str], grace_s: float) -> None:
        self.store, self.count, self.env, self.grace_s = store, count, env, grace_s
        self.procs: list[subprocess.Popen[bytes]] = []
        self._stopping = threading.Event()
        self._monitor: threading.Thread | None = None

    def _spawn(self) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "grader.cli", "worker", "--parent", str(os.getpid())]
        # Own session: a Ctrl-C at the terminal reaches the server, which then stops workers in order.
        proc = subprocess.Popen(cmd, env=self.env, start_new_session=True)
        log.info("worker started", extra={"pid": proc.pid})
        return proc

    def start(self) -> None:
        self.procs = [self._spawn() for _ in range(self.count)]
        self._monitor = threading.Thread(target=self._watch, name="worker-pool", daemon=True)
        self._monitor.start()

    def _watch(self) -> None:
        while not self._stopping.wait(1.0):
            for i, proc in enumerate(self.procs):
                if proc.poll() is not None and not self._stopping.is_set():
                    log.warning("worker exited; restarting", extra={"pid": proc.pid, "returncode": proc.returncode})
                    # Its job (if any) is re-queued when the lease lapses; releasing now is faster.
                    jobs.release_worker(self.store, f"{socket.gethostname()}:{proc.pid}", "worker process died", died=True)
                    self.procs[i] = self._spawn()

    def stop(self) -> None:
        """SIGTERM every worker (each finishes its job), wait for the grace period, then kill the rest."""
        self._stopping.set()
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                jobs.release_worker(self.store, f"{socket.gethostname()}:{proc.pid}", "server shut down", died=False)
        log.info("workers stopped")
