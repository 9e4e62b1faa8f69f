"""Error hierarchy of the NKI simulator: every failure names a code, a message and a kernel line.

Codes follow the compiler's `nki.errors` names where one exists (REFERENCE §2), so a reviewer can
look them up; simulator-only codes say so in their name (python_error, unsupported_op, ...).
"""

from __future__ import annotations


class EvidenceError(Exception):
    """Base of the simulator's errors, with structured fields (DESIGN §6)."""

    def __init__(self, code: str, message: str, file: str | None = None, line: int = 0) -> None:
        self.code = code
        self.message = message
        self.file = file
        self.line = line
        self.report = None  # the partial Simulation report, attached by `simulate` when available
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}: " if self.file else ""
        return f"{where}{self.code}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "file": self.file, "line": self.line}


class SimulationError(EvidenceError):
    """A hardware or language constraint the kernel violates (what neuronx-cc would reject)."""


class UnsupportedOpError(SimulationError):
    """The kernel calls an NKI API that has no entry in the simulator's op table."""


class UnsupportedMethodError(UnsupportedOpError, AttributeError):
    """A tile method or attribute the simulator does not implement (`tile.indirect(...)`): reported
    as `unsupported_op`, while `hasattr`/`getattr(..., default)` still see a missing attribute."""


class KernelError(SimulationError):
    """The kernel's own Python code raised (code `python_error`)."""


class KernelLoadError(EvidenceError):
    """The kernel source could not be loaded (syntax error, failing import, missing entry)."""
