"""Discovery of collectors and of the evidence kinds they declare.

Convention: a module that defines collectors is named `collector.py` or `*_collector.py`, or
`collectors.py`, anywhere under the `evidence` package. Importing this module imports all of
them, so the subclass walk in `evidence.collector` sees every collector.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

import evidence
from evidence.collector import Collector, concrete_collectors
from evidence.corroborate import CONFLICT_DOC, CONFLICT_KIND

# Kinds produced by the framework itself rather than by a collector.
FRAMEWORK_KINDS = {"analyzer_failure": "a collector crashed or timed out; its evidence is missing",
                   CONFLICT_KIND: CONFLICT_DOC}


def _is_collector_module(name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    return leaf in ("collector", "collectors") or leaf.endswith("_collector")


@cache
def load_collectors() -> tuple[type[Collector], ...]:
    for info in pkgutil.walk_packages(evidence.__path__, prefix="evidence."):
        if _is_collector_module(info.name):
            importlib.import_module(info.name)
    return tuple(cls for cls in concrete_collectors() if cls is not Collector)


@cache
def known_kinds() -> dict[str, str]:
    """kind -> meaning, over every collector; the rubric may cite only these."""
    kinds = dict(FRAMEWORK_KINDS)
    for cls in load_collectors():
        kinds.update(cls.kinds)
    return kinds
