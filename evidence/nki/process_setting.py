"""A process-wide setting held while any simulation in the process runs (malloc thresholds, the GIL
switch interval): applied when the first run starts, undone when the last one ends. Re-entrant and
thread-safe, so nested and concurrent simulations share one application of it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import contextmanager


class ProcessSetting:
    def __init__(self, apply: Callable[[], None], undo: Callable[[], None]) -> None:
        self._apply, self._undo = apply, undo
        self._lock = threading.Lock()
        self._users = 0

    @property
    def users(self) -> int:
        """How many runs hold the setting now."""
        return self._users

    @contextmanager
    def held(self):
        with self._lock:
            if self._users == 0:
                self._apply()
            self._users += 1
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._undo()
