"""A small in-process memo of a collector's items per submission and options.

Collectors whose evidence costs several child processes (the error model's trials, the cost
model's trace-only run) give the same items for the same submission content, collector version
and options, so re-evaluating a submission in one process (the API, a calibration run, tests)
reuses them. Items are frozen, so sharing them is safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from evidence.model import EvidenceItem

_MAX = 32
_memo: OrderedDict[tuple, tuple[EvidenceItem, ...]] = OrderedDict()
_lock = threading.Lock()


def memoized(key: tuple, compute: Callable[[], list[EvidenceItem]]) -> list[EvidenceItem]:
    with _lock:
        hit = _memo.get(key)
        if hit is not None:
            _memo.move_to_end(key)
            return list(hit)
    items = tuple(compute())
    with _lock:
        _memo[key] = items
        while len(_memo) > _MAX:
            _memo.popitem(last=False)
    return list(items)


def clear() -> None:
    with _lock:
        _memo.clear()
