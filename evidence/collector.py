"""The collector contract: one class per evidence source, discovered by subclass walk.

A collector turns a submission into evidence items. `gather` runs each one in isolation, so a
crash in one becomes an `AnalyzerFailure` and the others still report (DESIGN §6).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from evidence.model import EvidenceItem
from evidence.submission import Submission


class Collector(ABC):
    """Subclass, set the class attributes, implement `collect`. Abstract bases set `abstract = True`."""

    abstract: ClassVar[bool] = True
    name: ClassVar[str] = ""
    version: ClassVar[str] = "0"
    # Evidence kinds this collector may emit, with what each means (the rubric validates against these).
    kinds: ClassVar[dict[str, str]] = {}

    def __init__(self, **options: object) -> None:
        """Options override the class attributes a collector declares (e.g. a simulator's timeout)."""
        # Seconds per stage of the last `collect` (e.g. the simulator's kernel and reference phases);
        # `gather` records them next to the collector's total as "<name>.<stage>".
        self.timings: dict[str, float] = {}
        for key, value in options.items():
            if key.startswith("_") or key in Collector.__dict__ or not hasattr(type(self), key):
                raise TypeError(f"collector {self.name!r} has no option {key!r}")
            setattr(self, key, value)

    @property
    def analyzer(self) -> str:
        return f"{self.name}@{self.version}"

    def applies(self, submission: Submission) -> bool:  # noqa: ARG002 - default: always
        return True

    @abstractmethod
    def collect(self, submission: Submission) -> list[EvidenceItem]:
        """The evidence items for `submission`; raising is allowed (gather records an AnalyzerFailure)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "abstract" not in cls.__dict__:
            cls.abstract = False


def concrete_collectors() -> list[type[Collector]]:
    """Every non-abstract Collector subclass defined in the `evidence` package, in name order.

    Subclasses defined elsewhere (tests, notebooks) run only when passed to `gather` explicitly,
    so defining one never changes what every later evaluation gathers."""
    found: dict[str, type[Collector]] = {}
    stack = list(Collector.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if not cls.abstract and cls.__module__.split(".")[0] == "evidence":
            found[cls.name] = cls
    return [found[n] for n in sorted(found)]
