"""Content-addressed cache of validated model samples, so re-running an audit is free and identical.

The key covers everything that determines a sample: model, api base, the messages' hash, the
sampling parameters (temperature, seed, response schema, re-ask bound) and the sample index. Only
validated samples are stored; transport failures and exhausted re-asks are retried next run.
Entries are JSON files written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

CACHE_VERSION = 1


def cache_key(*, model: str, messages_hash: str, params: dict[str, Any], sample: int) -> str:
    canon = json.dumps(
        {"v": CACHE_VERSION, "model": model, "messages": messages_hash, "params": params, "sample": sample},
        sort_keys=True, separators=(",", ":"),
    )
    return hashlib.sha256(canon.encode()).hexdigest()


class SampleCache:
    def __init__(self, directory: Path, enabled: bool = True) -> None:
        self.directory = Path(directory) / "llm"
        self.enabled = enabled

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        if not self.enabled:
            return None
        try:
            return json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing or damaged entry: treat as a miss
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        if not self.enabled:
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(value, fh, sort_keys=True)
        os.replace(tmp, path)
