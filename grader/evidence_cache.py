"""Evidence bundles kept on disk, keyed by what decides them, so identical work is not redone.

Evidence is deterministic: the same submission content, collector options and evidence code give
the same bundle. Calibrating a second model on a gold set, re-running an audit's base items, or a
resubmitted kernel would otherwise re-run every sandboxed child (about a dozen per submission). The
key covers the submission's content hash, the collector options (sandbox mode, limits, cost-model
spec), the collectors and their versions, a hash of the `evidence` package's sources, and the
numeric libraries' versions; any change is a miss, never a stale bundle.

What depends on the host rather than the submission is never stored: a bundle with analyzer
failures, with a child that timed out, ran out of memory or CPU or crashed (`host_dependent_runs`
moved while it was gathered, in any thread of this process: a conservative miss), or without a
sandbox to run in. Entries are JSON files written atomically; the oldest go beyond `max_entries`.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tempfile
from functools import cache
from pathlib import Path

import ml_dtypes
import numpy as np
from pydantic import BaseModel, ValidationError

from evidence.catalog import load_collectors
from evidence.gather import gather
from evidence.model import EvidenceBundle
from evidence.sandbox import jobs
from evidence.submission import Submission
from grader.epoch import package_version, source_hash

FORMAT = 1  # bump when the entry layout changes
# Error codes of evidence items that say the run depended on the host (or was not made at all).
HOST_DEPENDENT_CODES = frozenset(jobs.HOST_DEPENDENT_CODES | {"sandbox_unavailable"})


@cache
def _code_identity() -> str:
    """What, besides the submission and options, decides a bundle: computed once per process."""
    collectors = sorted(f"{c.name}@{c.version}" for c in load_collectors())
    parts = {"format": FORMAT, "grader": package_version(), "evidence": source_hash("evidence"),
             "collectors": collectors, "numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__,
             "python": platform.python_version(), "machine": platform.machine()}
    return json.dumps(parts, sort_keys=True)


def _plain(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not a plain option value: {type(value).__name__}")


def cache_key(submission: Submission, options: dict) -> str:
    canon = json.dumps({"code": _code_identity(), "submission": submission.content_hash, "options": options},
                       sort_keys=True, default=_plain)
    return hashlib.sha256(canon.encode()).hexdigest()


def storable(bundle: EvidenceBundle) -> bool:
    """False when the bundle records something about the host rather than the submission."""
    if bundle.failures:
        return False
    return not any(item.labels.get("code") in HOST_DEPENDENT_CODES for item in bundle.items)


class EvidenceCache:
    def __init__(self, folder: Path, max_entries: int = 2000) -> None:
        self.folder = folder
        self.max_entries = max_entries

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> EvidenceBundle | None:
        path = self._path(key)
        try:
            bundle = EvidenceBundle.model_validate_json(path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return None  # missing, unreadable or from an older layout: gather again
        try:
            os.utime(path)  # recently used entries are the last to go
        except OSError:
            pass
        return bundle

    def put(self, key: str, bundle: EvidenceBundle) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "wb") as f:
                f.write(bundle.model_dump_json().encode())
            os.replace(tmp, path)  # readers see the old entry or the whole new one
        except OSError:
            return  # a cache that cannot be written is only a slower grader
        self._prune()

    def _prune(self) -> None:
        entries = list(self.folder.glob("*/*.json"))
        if len(entries) > self.max_entries:
            for old in sorted(entries, key=_mtime)[: len(entries) - self.max_entries]:
                old.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed by another process meanwhile
        return 0.0


def gather_cached(submission: Submission, options: dict, cache: EvidenceCache | None) -> EvidenceBundle:
    """The evidence for `submission`: from `cache` when an identical gather was stored, else gathered
    (and stored when nothing in it depended on the host)."""
    if cache is None:
        return gather(submission, options=options)
    key = cache_key(submission, options)
    hit = cache.get(key)
    if hit is not None and hit.submission_hash == submission.content_hash:
        return hit
    before = jobs.host_dependent_runs()
    bundle = gather(submission, options=options)
    if storable(bundle) and jobs.host_dependent_runs() == before:
        cache.put(key, bundle)
    return bundle
