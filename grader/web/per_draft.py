"""Values the pages derive from a draft alone (its evidence groups, the rendered evidence sections,
the bundle hash), computed once per draft instead of once per request.

The service hands out one parsed, frozen `Draft` object per stored draft
(`grader.service.evaluations.parsed_draft`), so the memo is keyed by that object's identity; it keeps a
reference to the draft, so an id is never reused while its entry lives. A draft built elsewhere (the
standalone report, tests) simply misses and is computed as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

from grader.draft import Draft

T = TypeVar("T")


class PerDraft:
    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[int, Hashable], tuple[Draft, object]] = OrderedDict()
        self._lock = threading.Lock()  # pages render in a thread pool

    def get(self, draft: Draft, key: Hashable, make: Callable[[], T]) -> T:
        slot = (id(draft), key)
        with self._lock:
            hit = self._entries.get(slot)
            if hit is not None and hit[0] is draft:
                self._entries.move_to_end(slot)
                return hit[1]  # type: ignore[return-value]
        value = make()  # outside the lock: two first requests may both compute, and one result is kept
        with self._lock:
            self._entries[slot] = (draft, value)
            self._entries.move_to_end(slot)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


per_draft = PerDraft()
